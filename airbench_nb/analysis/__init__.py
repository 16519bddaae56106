"""Analyses of a run folder: the paper's tables, position and order bias, circular evaluation, per-class metrics,
answer style, SNR curves and rankings. Each module answers one question with plain functions over the frames of
:mod:`airbench_nb.analysis.data`."""
