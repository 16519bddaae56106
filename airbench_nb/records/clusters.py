"""Which items are not independent: each item's cluster, the unit a bootstrap resamples.

A benchmark's items are often clustered: SSEU-Bench speaks each sentence over a scene at seven SNRs (and asks it in
several prompting modes), UG-Bench speaks one sentence in several translation directions, AIR-Bench asks several
questions about one recording. Resampling such items one by one makes an interval too narrow; resampling whole
clusters does not (:mod:`airbench_nb.scoring.resample`). :func:`cluster_of` says which cluster an item belongs to,
by its kind, unless its ``meta`` names one:

``meta["cluster"]``
    A cluster given by a recipe or an importer (any string): it wins over every rule below.
SSEU-Bench's kinds (``transcription``, ``scene``, ``events``, ``joint``)
    The utterance: the part of ``clip_id`` before ``@`` (``sseu-002@snr-6.67`` -> ``sseu-002``; the builder and the
    importer both write ``<utterance>@<snr tag>``), so that every mix, clean copy and prompting mode of one spoken
    sentence is one cluster.
``translation``
    The sentence (``meta["sentence_id"]``, the same in every direction of a multi-way parallel set).
Every other kind
    The recording: the item's first clip (``audios[0]``, else ``audio``), so that the questions about one clip are
    one cluster; the item itself (its uid) when it names no clip.

The key is prefixed with the rule that made it (``utterance:``, ``sentence:``, ``audio:``, ``item:``,
``given:``), so that keys of two rules never meet. A derived item (graded, rotated, control, perturbed copy) is
clustered with its original by whoever pairs them: the paired analyses read the original's cluster.
"""

from __future__ import annotations

from typing import Any

CLUSTER_META_KEY = "cluster"
"""Item ``meta`` key that names an item's cluster (a recipe's or an importer's), over the kind's rule."""

UTTERANCE_KINDS: frozenset[str] = frozenset({"transcription", "scene", "events", "joint"})
"""Kinds clustered by their utterance (the ``clip_id`` before ``@``)."""

CLUSTER_UNITS: dict[str, str] = {
    "given": "cluster named by the data (meta.cluster)",
    "utterance": "utterance (every SNR and prompting mode of one spoken sentence)",
    "sentence": "sentence (every translation direction of one sentence)",
    "audio": "recording (every question about one clip)",
    "item": "item",
}
"""What each rule's cluster is, in words (for tables and pages)."""


def cluster_of(item: Any) -> str:
    """The item's cluster key (see the module docstring), prefixed with the rule that made it."""
    # a record's fields are in its __dict__: read there first; a name neither there nor on its class (a field
    # another kind of item has) is None without asking the record (pydantic would raise and catch an exception)
    fields = getattr(item, "__dict__", None) or {}
    kind_of = type(item)

    def field(name: str) -> Any:
        if name in fields:
            return fields[name]
        return None if fields and not hasattr(kind_of, name) else getattr(item, name, None)

    meta = field("meta") or {}
    given = meta.get(CLUSTER_META_KEY)
    if given not in (None, ""):
        return f"given:{given}"
    kind = field("kind")
    clip = field("clip_id")
    if kind in UTTERANCE_KINDS and clip:
        return f"utterance:{str(clip).split('@', 1)[0]}"
    if kind == "translation" and meta.get("sentence_id") not in (None, ""):
        return f"sentence:{meta['sentence_id']}"
    audios = field("audios") or []
    audio = audios[0] if audios else field("audio")
    if audio:
        return f"audio:{audio}"
    return f"item:{field('uid')}"


def cluster_unit(keys: Any) -> str:
    """What a set of cluster keys' clusters are, in words (the rules' units, joined when several)."""
    rules = dict.fromkeys(str(k).split(":", 1)[0] for k in keys)
    return "; ".join(CLUSTER_UNITS.get(r, r) for r in rules) or CLUSTER_UNITS["item"]
