"""Tiered sound sources: every clip's defining property measured on the audio, the hierarchy file and its checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from airbench_nb.synth import sources
from airbench_nb.synth.sources import SYNTHESIZERS, hierarchy, render, synthesize
from airbench_nb.synth.sources.hierarchy import HIERARCHY_FILE, load_hierarchy, parse_hierarchy
from airbench_nb.synth.sources_measure import (
    PROPERTY_MEASURES,
    firing_rate_hz,
    impact_onsets,
    impact_rate_hz,
    lowest_partial_hz,
    measure,
    measure_many,
    partials_hz,
    pitch_modulation_hz,
)

SR = 16000
SEEDS = (0, 5, 11)
"""Seeds measured for every fine class."""


@pytest.fixture(scope="module")
def measured() -> dict[tuple[str, int], tuple[sources.SourceClip, dict[str, float]]]:
    """Every fine class at every seed: the clip and its category's properties measured on the audio."""
    h = hierarchy()
    out = {}
    for fine in h.fine_names:
        props = h.category(h.coarse_of(fine)).properties
        for seed in SEEDS:
            clip = render(fine, seed)
            out[fine, seed] = (clip, measure_many(clip.samples, props, SR))
    return out


def test_shipped_hierarchy_covers_the_synthesizers() -> None:
    h = hierarchy()
    assert len(h.categories) >= 6
    assert set(h.fine_names) == set(SYNTHESIZERS)
    for category in h.categories:
        assert 2 <= len(h.classes_of(category.name)) <= 4, category.name
        assert category.properties and set(category.properties) <= set(PROPERTY_MEASURES)
        assert category.synonyms and category.prompt
    for fine in h.classes:
        assert fine.ranges and fine.prompt and len(fine.synonyms) >= 3, fine.name
    mapping = h.fine_to_coarse()
    assert mapping["wail"] == "siren" and mapping["church_bell"] == "bell" and mapping["pour"] == "water"
    assert sources.coarse_of("smoke_alarm") == "alarm"
    assert list(mapping) == list(sources.fine_classes())


@pytest.mark.parametrize("fine", list(SYNTHESIZERS))
def test_defining_property_is_in_range_and_recovers_the_class(fine: str, measured: dict) -> None:
    h = hierarchy()
    spec = h.fine(fine)
    others = [h.fine(name) for name in h.classes_of(spec.coarse) if name != fine]
    for seed in SEEDS:
        clip, values = measured[fine, seed]
        for prop, (low, high) in spec.ranges.items():
            assert low <= values[prop] <= high, (fine, seed, prop, values[prop], clip.params)
        # Separated: no other class of the category admits the measured values, and the nearest range is its own.
        for other in others:
            inside = all(lo <= values[p] <= hi for p, (lo, hi) in other.ranges.items())
            assert not inside, (fine, seed, other.name, values)
        assert h.nearest_fine(spec.coarse, values) == fine


PARAMETER_OF: dict[str, tuple[str, str, float]] = {
    "wail": ("pitch_modulation_hz", "sweep_hz", 0.03),
    "yelp": ("pitch_modulation_hz", "sweep_hz", 0.03),
    "hi_lo": ("pitch_modulation_hz", "cycle_hz", 0.03),
    "two_tone": ("pitch_modulation_hz", "cycle_hz", 0.03),
    "church_bell": ("lowest_partial_hz", "hum_hz", 0.02),
    "hand_bell": ("lowest_partial_hz", "f0_hz", 0.02),
    "bicycle_bell": ("lowest_partial_hz", "f0_hz", 0.02),
    "reversing_beeper": ("dominant_hz", "freq_hz", 0.01),
    "microwave_beep": ("dominant_hz", "freq_hz", 0.01),
    "smoke_alarm": ("dominant_hz", "freq_hz", 0.01),
    "motorcycle_engine": ("firing_rate_hz", "firing_hz", 0.05),
    "truck_engine": ("firing_rate_hz", "firing_hz", 0.05),
    "car_engine": ("firing_rate_hz", "firing_hz", 0.05),
    "door_knock": ("impact_rate_hz", "knock_hz", 0.08),
    "footsteps": ("impact_rate_hz", "step_hz", 0.05),
    "clock_tick": ("impact_rate_hz", "tick_hz", 0.02),
    "bird_chirp": ("dominant_hz", "centre_hz", 0.05),
    "ship_horn": ("lowest_partial_hz", "freq_hz", 0.02),
    "truck_air_horn": ("lowest_partial_hz", "low_hz", 0.02),
    "car_horn": ("lowest_partial_hz", "low_hz", 0.02),
}
"""Classes whose defining property is one drawn parameter: (property, parameter, relative tolerance)."""


@pytest.mark.parametrize("fine", list(PARAMETER_OF))
def test_measurement_recovers_the_drawn_parameter(fine: str, measured: dict) -> None:
    prop, param, tolerance = PARAMETER_OF[fine]
    for seed in SEEDS:
        clip, values = measured[fine, seed]
        assert values[prop] == pytest.approx(clip.params[param], rel=tolerance), (seed, clip.params)


def test_pour_glide_is_the_drawn_glide_and_a_stream_does_not_glide(measured: dict) -> None:
    for seed in SEEDS:
        clip, values = measured["pour", seed]
        assert values["glide_oct_per_s"] == pytest.approx(clip.params["glide_oct_per_s"], abs=0.05)
        assert abs(measured["stream", seed][1]["glide_oct_per_s"]) < 0.1
        assert measured["drip", seed][1]["quiet_fraction"] > 0.7 > 0.1 > measured["stream", seed][1]["quiet_fraction"]


def test_a_sparse_drip_has_no_glide_and_is_still_a_drip() -> None:
    # seed 89 makes only a few drops: too few sounding blocks to follow a resonance
    values = measure_many(synthesize("drip", 89), ["quiet_fraction", "glide_oct_per_s"])
    assert np.isnan(values["glide_oct_per_s"]) and values["quiet_fraction"] > 0.5
    assert hierarchy().nearest_fine("water", values) == "drip"
    with pytest.raises(ValueError, match="not enough|fewer than 3"):
        measure(synthesize("drip", 89), "glide_oct_per_s")


def test_church_bell_partials_stand_a_minor_third_apart() -> None:
    clip = render("church_bell", 2)
    hum = clip.params["hum_hz"]
    found = partials_hz(clip.samples, within_db=30.0)
    # hum, prime, tierce (minor third: 6/5 of the prime), quint and nominal, relative to the hum
    for ratio in (1.0, 2.0, 2.4, 3.0, 4.0):
        nearest = found[np.argmin(np.abs(found - ratio * hum))]
        assert nearest == pytest.approx(ratio * hum, rel=0.01), (ratio, found)
    tierce = found[np.argmin(np.abs(found - 2.4 * hum))] / found[np.argmin(np.abs(found - 2.0 * hum))]
    assert 12 * np.log2(tierce) == pytest.approx(3.16, abs=0.1)  # a minor third (6/5) above the prime


def test_smoke_alarm_sounds_the_t3_pattern() -> None:
    clip = render("smoke_alarm", 4)
    onsets = impact_onsets(clip.samples)
    gaps = np.diff(onsets) / clip.params["unit_s"]
    # three beeps two units apart, then five units to the next group
    assert gaps[:3] == pytest.approx([2.0, 2.0, 5.0], abs=0.1)


def test_clips_are_mono_float32_short_and_peak_safe(measured: dict) -> None:
    for (fine, seed), (clip, _) in measured.items():
        x = clip.samples
        assert x.dtype == np.float32 and x.ndim == 1, fine
        assert 2.0 <= clip.duration_s <= 5.0, (fine, seed, clip.duration_s)
        assert np.all(np.isfinite(x))
        assert 0.3 - 1e-6 <= float(np.max(np.abs(x))) <= 0.8 + 1e-6
        assert clip.coarse == sources.coarse_of(fine) and clip.seed == seed


def test_same_seed_same_clip_other_seed_other_clip() -> None:
    for fine in ("yelp", "drip", "truck_engine"):
        a, b, c = synthesize(fine, 3), synthesize(fine, 3), synthesize(fine, 4)
        np.testing.assert_array_equal(a, b)
        assert a.size != c.size or not np.allclose(a, c)
    assert render("hand_bell", 9).params == render("hand_bell", 9).params
    # seeds of different classes are independent streams: same seed, different draws
    assert render("wail", 1).params["peak"] != render("yelp", 1).params["peak"]


def test_other_sample_rates_keep_the_property() -> None:
    for fine in ("hi_lo", "car_engine", "bird_chirp"):
        clip = render(fine, 2, sr=22050)
        spec = sources.class_spec(fine)
        assert clip.samples.size == pytest.approx(render(fine, 2).duration_s * 22050, abs=2)
        for prop, (low, high) in spec.ranges.items():
            assert low <= measure(clip.samples, prop, 22050) <= high


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fine_class": "gunshot", "seed": 0}, "unknown fine class 'gunshot'"),
        ({"fine_class": "wail", "seed": -1}, "seed"),
        ({"fine_class": "wail", "seed": True}, "seed"),
        ({"fine_class": "wail", "seed": 1.5}, "seed"),
        ({"fine_class": "wail", "seed": 0, "sr": 8000}, "sr"),
    ],
)
def test_render_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        render(**kwargs)


# --- the measurers on signals made here, independently of the synthesizers ---------------------------------


def test_measurers_read_hand_made_signals() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(3 * SR) / SR
    # a tone whose pitch moves sinusoidally 1.7 times a second
    freq = 800 * 2 ** (0.3 * np.sin(2 * np.pi * 1.7 * t))
    assert pitch_modulation_hz(np.sin(2 * np.pi * np.cumsum(freq) / SR)) == pytest.approx(1.7, abs=0.01)
    # two steady tones: the lower is the lowest partial
    assert lowest_partial_hz(np.sin(2 * np.pi * 310 * t) + 0.5 * np.sin(2 * np.pi * 470 * t)) == pytest.approx(
        310, abs=1
    )
    # a click train at 23 Hz in noise
    x = 0.01 * rng.standard_normal(t.size)
    x[:: SR // 23] += 1.0
    assert firing_rate_hz(x) == pytest.approx(SR / (SR // 23), rel=0.01)
    # decaying taps every 0.4 s
    y = 0.001 * rng.standard_normal(t.size)
    for start in range(int(0.1 * SR), t.size - 2000, int(0.4 * SR)):
        y[start : start + 2000] += np.exp(-np.arange(2000) / 200) * np.sin(2 * np.pi * 900 * np.arange(2000) / SR)
    assert impact_rate_hz(y) == pytest.approx(2.5, rel=0.01)
    assert measure(y, "quiet_fraction") > 0.5 > measure(rng.standard_normal(t.size), "quiet_fraction")


@pytest.mark.parametrize(
    ("x", "match"),
    [
        (np.zeros(SR), "silent"),
        (np.ones((2, SR)), "mono"),
        (np.ones(100), "long"),
        (np.full(SR, np.nan), "NaN"),
    ],
)
def test_measurers_reject_what_they_cannot_measure(x: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        lowest_partial_hz(x)


def test_measure_names_an_unknown_property() -> None:
    with pytest.raises(ValueError, match="unknown property 'loudness'"):
        measure(np.ones(SR), "loudness")
    with pytest.raises(ValueError, match="at least 2"):
        impact_rate_hz(np.sin(np.arange(SR) * 0.3))


# --- the hierarchy file -----------------------------------------------------------------------------------


def small() -> dict:
    """A valid two-category hierarchy to break."""
    return {
        "version": 1,
        "properties": {"rate_hz": {"unit": "Hz", "description": "events per second"}},
        "categories": [
            {"name": "siren", "description": "sirens", "properties": ["rate_hz"], "synonyms": ["siren"]},
            {"name": "dog", "description": "dogs"},
        ],
        "classes": [
            {"name": "wail", "coarse": "siren", "description": "slow", "ranges": {"rate_hz": [0.2, 0.5]}},
            {"name": "yelp", "coarse": "siren", "description": "fast", "ranges": {"rate_hz": [3, 5]}, "prompt": "p"},
            {"name": "bark", "coarse": "dog", "description": "a bark", "synonyms": ["woof"]},
        ],
    }


def test_parse_types_the_records_and_fills_defaults() -> None:
    h = parse_hierarchy(small(), "small.json")
    assert h.fine_names == ("wail", "yelp", "bark") and h.coarse_names == ("siren", "dog")
    assert h.fine_to_coarse() == {"wail": "siren", "yelp": "siren", "bark": "dog"}
    assert h.fine("wail").ranges == {"rate_hz": (0.2, 0.5)}
    assert h.fine("wail").prompt == "slow" and h.fine("yelp").prompt == "p"
    assert h.category("dog").prompt == "dogs" and h.category("dog").properties == ()
    assert h.properties["rate_hz"].unit == "Hz"
    # nearest range: inside one range, or nearer one edge in range widths
    assert h.nearest_fine("siren", {"rate_hz": 0.3}) == "wail"
    assert h.nearest_fine("siren", {"rate_hz": 2.0}) == "yelp"  # 1.5/0.3 = 5 widths from wail, 0.5 from yelp
    assert h.nearest_fine("siren", {"rate_hz": 0.9}) == "yelp"  # 1.33 widths from wail against 1.05 from yelp
    assert h.nearest_fine("siren", {"rate_hz": 0.7}) == "wail"  # 0.67 widths against 1.15
    with pytest.raises(ValueError, match="no class of 'siren' is within reach"):
        h.nearest_fine("siren", {"rate_hz": float("nan")})
    with pytest.raises(ValueError, match="no measured value of 'rate_hz'"):
        h.nearest_fine("siren", {})
    with pytest.raises(ValueError, match="gives no property ranges"):
        h.nearest_fine("dog", {})
    with pytest.raises(KeyError, match="no fine class 'moo' in the hierarchy small.json"):
        h.coarse_of("moo")
    with pytest.raises(KeyError, match="no coarse category 'cat'"):
        h.classes_of("cat")


def _set(path: tuple, value: object):
    def edit(d: dict) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_set(("classes", 2, "coarse"), "cat"), r"classes\[2\] \('bark'\): field 'coarse': category 'cat' does not"),
        (_set(("classes", 1, "name"), "wail"), r"classes\[1\] \('wail'\): duplicate name 'wail'"),
        (_set(("classes", 2, "name"), "dog"), r"duplicate name 'dog' \(already used by categories\[1\]"),
        (_set(("categories", 1, "name"), "siren"), "duplicate name 'siren'"),
        (_set(("classes", 0, "coarse"), KeyError), r"classes\[0\]: missing fields \['coarse'\]"),
        (_set(("classes", 1, "label"), "Wail"), r"option text 'Wail' is also that of classes\[0\]"),
        (_set(("classes", 0, "colour"), "red"), r"classes\[0\]: unknown fields \['colour'\]"),
        (_set(("classes", 0, "name"), ""), "field 'name' must be a non-empty string"),
        (_set(("classes", 0, "synonyms"), "siren"), "field 'synonyms' must be a list"),
        (_set(("classes", 0, "ranges", "rate_hz"), [0.5, 0.2]), r"ranges\['rate_hz'\]: a range must be"),
        (_set(("classes", 0, "ranges", "rate_hz"), [0.2, "x"]), "a range must be"),
        (_set(("classes", 0, "ranges", "rate_hz"), [1, 4]), "'wail' and 'yelp' overlap on every property"),
        (_set(("classes", 0, "ranges"), {"pitch_hz": [1, 2]}), "property 'pitch_hz' is not one of category"),
        (_set(("classes", 1, "ranges"), KeyError), r"classes \['yelp'\] give no ranges while others do"),
        (_set(("categories", 0, "properties"), ["loudness"]), "property 'loudness' is not declared"),
        (_set(("classes",), [{"name": "wail", "coarse": "siren", "description": "x"}]), "'dog'.*has no fine classes"),
        (_set(("classes",), []), "classes: must be a non-empty list"),
        (_set(("categories", 0), "siren"), r"categories\[0\]: an entry must be an object"),
        (_set(("version",), 2), "only version 1"),
        (_set(("properties", "rate_hz"), {"unit": "Hz"}), r"properties\['rate_hz'\]: missing fields"),
    ],
)
def test_parse_names_the_defect(edit, match: str) -> None:
    data = copy.deepcopy(small())
    edit(data)
    with pytest.raises(ValueError, match=match) as info:
        parse_hierarchy(data, "small.json")
    assert str(info.value).startswith("small.json: ")


def test_load_names_the_file(tmp_path: Path) -> None:
    assert load_hierarchy().fine_names == hierarchy().fine_names
    assert json.loads(HIERARCHY_FILE.read_text())["version"] == 1
    good = tmp_path / "mine.json"
    good.write_text(json.dumps(small()))
    assert load_hierarchy(good).source == str(good)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match=r"broken.json:1: not valid JSON"):
        load_hierarchy(broken)
    bad = small()
    bad["classes"][0]["coarse"] = "cat"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"bad.json: classes\[0\] \('wail'\): field 'coarse'"):
        load_hierarchy(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError, match="missing.json"):
        load_hierarchy(tmp_path / "missing.json")


def test_a_clip_without_periodicity_has_no_firing_rate() -> None:
    """Silence, or footsteps (every autocorrelation peak in the engines' range is negative), is not measurable: NaN in
    measure_many, never an IndexError."""
    from airbench_nb.synth.sources_measure import firing_rate_hz, measure_many

    flat = np.zeros(16000 * 2, dtype=np.float32)
    for clip, why in ((flat, "silent"), (render("footsteps", seed=0).samples, "no periodicity")):
        with pytest.raises(ValueError, match=why):
            firing_rate_hz(clip)
        assert np.isnan(measure_many(clip, ["firing_rate_hz"])["firing_rate_hz"])
