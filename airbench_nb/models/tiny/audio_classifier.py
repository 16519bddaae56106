"""Tiny random audio classifier: ``ASTForAudioClassification`` with a made-up label set and its own mapping table."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

logger = logging.getLogger(__name__)

TINY_CLASSIFIER_LABELS: tuple[str, ...] = (
    "Wailing siren",
    "Yelping siren",
    "Church bell",
    "Hand bell",
    "Beeper",
    "Diesel engine",
    "Dripping",
    "Pouring",
    "Knocking",
    "Footsteps",
    "Speech",
    "Music",
)
"""The tiny classifier's labels (made up, AudioSet-like); the last two have no mapping."""

TINY_CLASSIFIER_MAPPING: tuple[tuple[str, str, str], ...] = (
    ("Wailing siren", "wail siren", "exact"),
    ("Yelping siren", "yelp siren", "exact"),
    ("Church bell", "church bell", "exact"),
    ("Hand bell", "handbell", "exact"),
    ("Church bell", "handbell", "approximate"),
    ("Beeper", "alarm beeper", "exact"),
    ("Diesel engine", "engine", "exact"),
    ("Dripping", "drip", "exact"),
    ("Pouring", "pour", "exact"),
    ("Knocking", "knock", "exact"),
    ("Footsteps", "footsteps", "exact"),
)
"""Rows of the tiny classifier's ``label_mapping.csv`` (source label, task class, match): ``handbell`` has two source
labels (its score is the better of the two), ``Speech`` and ``Music`` none."""

TINY_AST_MAX_FRAMES = 200
"""Frames the tiny AST reads (10 ms each: 2 s of audio; the real AudioSet AST reads 1024)."""

TINY_AST_INIT_RANGE = 0.2
"""Standard deviation of the random weights: wide enough that the scores depend on the audio."""


def build_tiny_audio_classifier(path: str | Path, seed: int = 0) -> Path:
    """Build a random AST audio classifier (about 30k parameters) with its feature extractor and mapping table.

    Args:
        path: Folder to write (created if needed).
        seed: Seed of the random weights.

    Returns:
        The folder, loadable with ``classifier:<folder>`` (which reads the folder's ``label_mapping.csv``) and with
        ``AutoModelForAudioClassification``.
    """
    import torch
    from transformers import ASTConfig, ASTFeatureExtractor, ASTForAudioClassification

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    mel_bins = 32
    config = ASTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_mel_bins=mel_bins,
        max_length=TINY_AST_MAX_FRAMES,
        patch_size=16,
        frequency_stride=10,
        time_stride=10,
        initializer_range=TINY_AST_INIT_RANGE,
        id2label=dict(enumerate(TINY_CLASSIFIER_LABELS)),
        label2id={label: i for i, label in enumerate(TINY_CLASSIFIER_LABELS)},
        problem_type="multi_label_classification",
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ASTForAudioClassification(config).eval()
    extractor = ASTFeatureExtractor(num_mel_bins=mel_bins, max_length=TINY_AST_MAX_FRAMES, sampling_rate=16000)
    model.save_pretrained(out)
    extractor.save_pretrained(out)
    with (out / "label_mapping.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["source_label", "task_class", "match"])
        writer.writerows(TINY_CLASSIFIER_MAPPING)
    logger.info("tiny AST classifier (%d parameters) saved in %s", sum(p.numel() for p in model.parameters()), out)
    return out
