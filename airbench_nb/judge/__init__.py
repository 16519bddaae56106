"""Judges: rule-based choice extraction, LLM judges for Foundation and Chat, and the offline Chat proxy."""
