"""Scoring result files in the official AIR-Bench formats (Foundation results JSONL, Chat judge lists)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from airbench_nb.judge.chat_parse import parse_scores_official, parse_scores_strict
from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import ManifestError, json_problem, parse_json_bytes
from airbench_nb.official import normalise_choice
from airbench_nb.records import CHAT_TASKS, KIT_CHAT_TASKS, KIT_FOUNDATION_TASKS, LETTERS
from airbench_nb.score_table import RunScores
from airbench_nb.scoring.aggregate import DEFAULT_REPS, _chat_section, _foundation_section, _log_summary
from airbench_nb.scoring.outcomes import PROTOCOLS, ChatOutcome, FoundationOutcome, official_foundation_correct

logger = logging.getLogger(__name__)

FOUNDATION_FILE_FIELDS: tuple[str, ...] = ("task_name", "dataset_name", "choice_a", "choice_b", "answer_gt")
"""Fields an official Foundation result line needs to be placed and scored (``response`` is checked apart)."""

CHAT_SCORE_FIELD = "gpt-score"
"""Field of an official Chat judge list that holds the judge's raw reply."""


def _read_entries(path: Path) -> Iterator[tuple[int, Any, str | None, str | None]]:
    r"""``(line or entry number, object, error, field)`` for a JSONL file or a JSON list (entries numbered from 1).

    JSON Lines are split on ``"\n"`` only, as the official scripts read them (iterating the file). A row may
    hold a raw U+2028, U+2029 or U+0085 (``json.dumps(ensure_ascii=False)`` leaves them unescaped), which
    :meth:`str.splitlines` would take for line breaks, cutting one row into two invalid ones. A line (or list
    entry) with bytes that are not UTF-8, an integer longer than Python converts, or nesting too deep is invalid,
    with the field named; the others are read.

    Raises:
        ManifestError: Naming the file, when it holds one JSON object (not a list or JSON Lines of rows), or a
            JSON list that does not parse.
    """
    raw = path.read_bytes()
    stripped = raw.strip()
    if stripped.startswith(b"["):
        data, field, problem = parse_json_bytes(raw)
        if data is None:
            raise ManifestError(str(path), None, f"invalid JSON list: {problem}")
        if not isinstance(data, list):
            raise ManifestError(str(path), None, f"expected a JSON list of rows, got {type(data).__name__}")
        for index, obj in enumerate(data, start=1):
            found = json_problem(obj)
            if found is not None:
                yield index, None, found[1], found[0]
            else:
                yield index, obj, None, None
        return
    if stripped.startswith(b"{") and b"\n" in stripped:
        whole, _, problem = parse_json_bytes(raw)
        if problem is None and isinstance(whole, dict):
            raise ManifestError(
                str(path), None, "holds one JSON object, not a JSON list or JSON Lines of result rows (one per line)"
            )
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        obj, field, problem = parse_json_bytes(line)
        if isinstance(obj, dict) and "task_name" not in obj and any(_holds_rows(v) for v in obj.values()):
            raise ManifestError(
                str(path), lineno, "holds a JSON object of rows, not a JSON list or JSON Lines of result rows"
            )
        yield lineno, (obj if problem is None else None), problem, field


def _holds_rows(value: Any) -> bool:
    """Whether a value is a non-empty list of objects (the rows of a wrapper such as ``{"results": [...]}``)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


KIT_ROWS_WHY = (
    "rows of the kit's own tasks (kit_ prefix: multi-clip Foundation, multi-turn Chat) are not AIR-Bench's: the "
    "official scripts know no such task, so these files are scored without them"
)
"""Why rows of the kit's tasks are left out of official-format files (``kit_rows`` of a section)."""


class _Problems:
    """Invalid lines of the official files: counted and described, or raised at once; kit rows counted apart."""

    def __init__(self, raise_on_error: bool) -> None:
        self.raise_on_error = raise_on_error
        self.errors: list[ManifestError] = []
        self.kit: Counter[str] = Counter()
        """Rows of the kit's own tasks, left out, by task."""
        self.strict_only: list[ManifestError] = []
        """Rows the official scripts count and the strict protocol refuses (the three edge classes)."""

    def strict_refuses(self, path: Path, line: int, message: str, field: str) -> None:
        """A row the official protocol counts, as the scripts do, and the strict protocol refuses as invalid."""
        error = ManifestError(
            str(path), line, message + " (counted by the official protocol, as the scripts do)", field=field
        )
        if self.raise_on_error:
            raise error
        logger.warning("strict protocol: skipping invalid line: %s", error)
        self.strict_only.append(error)

    def add(self, path: Path, line: int, message: str, field: str | None = None) -> None:
        error = ManifestError(str(path), line, message, field=field)
        if self.raise_on_error:
            raise error
        logger.warning("skipping invalid line: %s", error)
        self.errors.append(error)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value)


def _gold_index(answer: str, choices: list[str]) -> int | None:
    """Index of the choice equal to ``answer``, or None.

    The official rule first (the first exact match, a to d), else a unique match after folding case and
    whitespace and dropping a final period.
    """
    for index, choice in enumerate(choices):
        if choice == answer:
            return index
    loose = [i for i, c in enumerate(choices) if normalise_choice(c) == normalise_choice(answer)]
    return loose[0] if len(loose) == 1 else None


def _official_gold(answer: str, fields: list[str | None]) -> int | None:
    """Position (a=0 .. d=3) of the choice equal to ``answer``, looked up as the scripts do.

    ``choice_a`` to ``choice_d`` in turn, an absent one never matching; then a unique loose match, as
    :func:`_gold_index` does.
    """
    for index, choice in enumerate(fields):
        if choice is not None and choice == answer:
            return index
    loose = [i for i, c in enumerate(fields) if c is not None and normalise_choice(c) == normalise_choice(answer)]
    return loose[0] if len(loose) == 1 else None


def _gap_field(fields: list[str | None]) -> str:
    """The first absent ``choice_<letter>`` before the last present one."""
    return f"choice_{LETTERS[fields.index(None)].lower()}"


def _gap(fields: list[str | None]) -> str | None:
    """What is wrong when a choice is given after an absent one (``choice_d`` without ``choice_c``), or None.

    Letters keep their positions in the official scripts; for up to four options this is the scripts' only gap.
    """
    last = max(i for i, f in enumerate(fields) if f is not None)
    if None not in fields[:last]:
        return None
    if last == 3 and fields[2] is None:
        return "choice_d is given without choice_c"
    missing = LETTERS[fields.index(None)].lower()
    return f"choice_{LETTERS[last].lower()} is given without choice_{missing}"


def _foundation_file(path: Path, problems: _Problems) -> dict[str, list[FoundationOutcome]]:
    outcomes: dict[str, list[FoundationOutcome]] = {"official": [], "strict": []}
    for line, row, error, where in _read_entries(path):
        if error is not None:
            problems.add(path, line, error, field=where)
            continue
        if not isinstance(row, dict):
            problems.add(path, line, f"expected a JSON object, got {type(row).__name__}")
            continue
        missing = [f for f in FOUNDATION_FILE_FIELDS if _as_text(row.get(f)) is None]
        if missing:
            problems.add(path, line, f"missing or not text: {', '.join(missing)}", field=missing[0])
            continue
        task, dataset = str(row["task_name"]), str(row["dataset_name"])
        if task in KIT_FOUNDATION_TASKS:
            problems.kit[task] += 1
            continue
        fields = [str(row["choice_a"]), str(row["choice_b"])]
        fields += [_as_text(row.get(f"choice_{letter}")) for letter in LETTERS[2:].lower()]
        while len(fields) > 4 and fields[-1] is None:  # choice_e .. choice_z: the kit's items of many options
            fields.pop()
        choices = [c for c in fields if c is not None]
        answer = str(row["answer_gt"])
        gold = _gold_index(answer, choices)
        # What strict refuses and the scripts count: choice_d without choice_c (letters keep their positions), and
        # an answer_gt matching no choice when the answer fails before the scripts look the gold up.
        gap = _gap(fields)
        unmatched = f"answer_gt {row['answer_gt']!r} matches none of {choices!r}" if gold is None else None
        response = row.get("response")
        if not isinstance(response, str):
            if gap or unmatched:
                problems.add(path, line, str(gap or unmatched), field=_gap_field(fields) if gap else "answer_gt")
                continue
            why = "no 'response' field" if "response" not in row else f"response is {type(response).__name__}"
            outcomes["official"].append(FoundationOutcome(task, dataset, None, why))
            outcomes["strict"].append(FoundationOutcome(task, dataset, None, why))
            continue
        official_gold = _official_gold(answer, fields) if gap else gold
        n_official = len(fields) if gap else len(choices)
        correct, reason = official_foundation_correct(
            response, n_official, -1 if official_gold is None else official_gold
        )
        if official_gold is None and correct is not None:  # the scripts stop here: no gold letter for a read letter
            problems.add(path, line, str(unmatched), field="answer_gt")
            continue
        outcomes["official"].append(FoundationOutcome(task, dataset, correct, reason))
        if gap or unmatched:
            problems.strict_refuses(path, line, str(gap or unmatched), field=_gap_field(fields) if gap else "answer_gt")
            continue
        extraction = extract_choice(response, choices)
        strict = None if extraction.choice is None else extraction.choice == gold
        outcomes["strict"].append(FoundationOutcome(task, dataset, strict, extraction.reason))
    return outcomes


def _chat_file(path: Path, order: str, problems: _Problems) -> dict[str, list[ChatOutcome]]:
    """Outcomes of one Chat judge list; ``order`` says whether score 1 is the reference or the model."""
    outcomes: dict[str, list[ChatOutcome]] = {"official": [], "strict": []}
    folded = {name.casefold(): name for name in CHAT_TASKS}
    previous: str | None = None  # the task of the last row with a known task name: cal_score.py's category
    for line, row, error, where in _read_entries(path):
        if error is not None:
            problems.add(path, line, error, field=where)
            continue
        if not isinstance(row, dict):
            problems.add(path, line, f"expected a JSON object, got {type(row).__name__}")
            continue
        task = row.get("task_name")
        if isinstance(task, str) and task in KIT_CHAT_TASKS:
            problems.kit[task] += 1
            continue
        protocols: tuple[str, ...] = PROTOCOLS
        if task not in CHAT_TASKS:
            message = "missing 'task_name'" if task is None else f"unknown Chat task {task!r}"
            if not (isinstance(task, str) and task.casefold() in folded and previous is not None):
                problems.add(path, line, message, field="task_name")
                continue
            # cal_score.py compares names exactly: a known name in another case leaves its category variable as the
            # previous row set it, so the row counts there. Strict refuses it.
            problems.strict_refuses(
                path, line, f"{message} (in another case than {folded[task.casefold()]!r})", "task_name"
            )
            task, protocols = previous, ("official",)
        else:
            previous = task
        uniq = _as_text(row.get("uniq_id"))
        unit = f"{task}/{row.get('dataset_name')}/{uniq}" if uniq is not None else f"{path}:{line}"
        reply = row.get(CHAT_SCORE_FIELD)
        if not isinstance(reply, str):
            why = f"no {CHAT_SCORE_FIELD!r} field" if CHAT_SCORE_FIELD not in row else "judge reply is not text"
            for name in protocols:
                outcomes[name].append(ChatOutcome(task, unit, order, None, None, why))
            continue
        official = parse_scores_official(reply)
        if official is None:
            reason = "official: reply is not two integers separated by one space"
            outcomes["official"].append(ChatOutcome(task, unit, order, None, None, reason))
        else:
            outcomes["official"].append(ChatOutcome(task, unit, order, *_by_order(official, order), "official parser"))
        if "strict" not in protocols:
            continue
        strict = parse_scores_strict(reply)
        if isinstance(strict, str):
            outcomes["strict"].append(ChatOutcome(task, unit, order, None, None, strict))
        else:
            outcomes["strict"].append(ChatOutcome(task, unit, order, *_by_order(strict, order), "strict parser"))
    return outcomes


def _by_order(scores: tuple[float, float], order: str) -> tuple[float, float]:
    """``(model, reference)`` from ``(score 1, score 2)``."""
    first, second = float(scores[0]), float(scores[1])
    return (first, second) if order == "hypothesis_first" else (second, first)


STRICT_ONLY_WHY = (
    "rows the official scripts count and the strict protocol refuses: choice_d without choice_c (letters keep their "
    "positions), an answer_gt matching no choice with an answer that fails first (a failure), a Chat task name in "
    "another case (counted in the previous row's category)"
)
"""Why the two protocols' ``invalid`` counts differ (``strict_only`` of a section)."""


def _invalid(problems: _Problems, protocol: str) -> dict[str, Any]:
    """``invalid``, ``errors`` and, when the protocols differ, ``strict_only`` of one protocol's section."""
    errors = problems.errors + (problems.strict_only if protocol == "strict" else [])
    fields: dict[str, Any] = {"invalid": len(errors), "errors": [str(e) for e in errors]}
    if problems.strict_only:
        fields["strict_only"] = {"count": len(problems.strict_only), "why": STRICT_ONLY_WHY}
    return fields


def score_official_files(
    foundation: str | Path | None = None,
    chat: str | Path | None = None,
    chat_swapped: str | Path | None = None,
    seed: int = 0,
    *,
    reps: int = DEFAULT_REPS,
    raise_on_error: bool = False,
) -> RunScores:
    """Re-score result files in the official AIR-Bench formats with both protocols.

    Args:
        foundation: Foundation results JSONL: the official meta fields (``choice_a``.. ``choice_d``, up to
            ``choice_z`` for the kit's items of many options, ``answer_gt`` as the text of the right choice,
            ``task_name``, ``dataset_name``, ...) plus ``response``.
        chat: Chat judge list (JSON list or JSONL) with ``task_name`` and ``gpt-score``, the reference shown
            first: score 1 is the reference's, score 2 the model's.
        chat_swapped: The same with the order swapped: score 1 is the model's.
        seed: Seed of the bootstrap.
        reps: Bootstrap replicates.
        raise_on_error: Raise the first invalid line instead of counting it.

    Returns:
        A :class:`~airbench_nb.score_table.RunScores` with ``official`` and ``strict``; each table has
        ``foundation`` (``subsets``, ``tasks``, ``categories``, ``average``, ``failed``, ``invalid``, ``errors``)
        and ``chat`` (``tasks``, ``categories``, ``average``, ``failed``, ``invalid``, ``errors``), a section being
        None when its files were not given.
        Rows of the kit's own tasks (``kit_*``: multi-clip, multi-turn) are left out, neither scored nor invalid,
        and counted in the section's ``kit_rows`` (``count``, per task, ``why``; absent when there are none).
        The official protocol uses :func:`official_extract` and :func:`parse_scores_official`, the strict one
        :func:`extract_choice` and :func:`parse_scores_strict`.

    Raises:
        FileNotFoundError: If a named file does not exist.
        ManifestError: On a Chat file that starts as a JSON list but is not valid JSON, or on any invalid line
            with ``raise_on_error``.
    """
    if foundation is None and chat is None and chat_swapped is None:
        raise ValueError("nothing to score: give a Foundation results file and/or Chat judge files")
    for given in (foundation, chat, chat_swapped):
        if given is not None and not Path(given).is_file():
            raise FileNotFoundError(f"{given}: no such file")
    result: dict[str, Any] = {name: {"protocol": name, "seed": seed, "reps": reps} for name in PROTOCOLS}

    f_problems = _Problems(raise_on_error)
    f_outcomes = _foundation_file(Path(foundation), f_problems) if foundation is not None else None
    c_problems = _Problems(raise_on_error)
    c_outcomes: dict[str, list[ChatOutcome]] = {name: [] for name in PROTOCOLS}
    for path, order in ((chat, "reference_first"), (chat_swapped, "hypothesis_first")):
        if path is not None:
            for name, outcomes in _chat_file(Path(path), order, c_problems).items():
                c_outcomes[name].extend(outcomes)
    if (chat is None) != (chat_swapped is None):
        logger.warning("only one Chat order given: the Chat scores cover that order alone")

    for name in PROTOCOLS:
        table = result[name]
        table["foundation"] = None
        if f_outcomes is not None:
            section = _foundation_section(f_outcomes[name], name, reps, seed)
            section.update(_invalid(f_problems, name))
            if f_problems.kit:
                section["kit_rows"] = {"count": sum(f_problems.kit.values()), **f_problems.kit, "why": KIT_ROWS_WHY}
            section["source"] = str(foundation)
            table["foundation"] = section
        table["chat"] = None
        if chat is not None or chat_swapped is not None:
            section = _chat_section(c_outcomes[name], name, reps, seed)
            section.update(_invalid(c_problems, name))
            if c_problems.kit:
                section["kit_rows"] = {"count": sum(c_problems.kit.values()), **c_problems.kit, "why": KIT_ROWS_WHY}
            section["source"] = [str(p) for p in (chat, chat_swapped) if p is not None]
            table["chat"] = section
        _log_summary(name, table)
    return RunScores.model_validate(result)
