"""Analyses of a run folder, one module per question.

The paper's tables, position and order bias, circular evaluation, per-class metrics, answer style, SNR curves and
rankings; each reads the frames of :mod:`airbench_nb.analysis.data`.
"""
