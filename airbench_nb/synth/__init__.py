"""Offline audio sources at 16 kHz mono: speech (espeak-ng), music, sounds and coloured noise."""
