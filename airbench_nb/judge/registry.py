"""The judge registry: judge classes by spec name, and the judges it builds from spec strings.

Specs: ``rule``, ``proxy``, ``openai:<model>[@<base_url>]``, ``hf:<path>``, ``asr:<model spec>`` (spoken answers
transcribed back: :mod:`airbench_nb.judge.asr`). A judge is added by writing a class (see
:class:`~airbench_nb.judge.base.BaseJudge`) and calling :func:`register_judge` with it; the judge loop, the run
folder and the CLI then take its spec.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import Any

from airbench_nb.judge.asr import ASRJudge
from airbench_nb.judge.base import BaseJudge, Judge, JudgeSpecError
from airbench_nb.judge.llm import HFJudge, OpenAIJudge
from airbench_nb.judge.proxy import ProxyJudge
from airbench_nb.judge.rule import RuleJudge
from airbench_nb.judge.sources import SourcesJudge
from airbench_nb.judge.strategy import StrategyJudge

logger = logging.getLogger(__name__)

_JUDGES: dict[str, type[BaseJudge]] = {}
"""Registered judge classes by :attr:`~airbench_nb.judge.base.BaseJudge.name`, in registration order."""


def register_judge(cls: type[BaseJudge]) -> type[BaseJudge]:
    """Register a judge class under its :attr:`~airbench_nb.judge.base.BaseJudge.name` (usable as a decorator).

    Raises:
        ValueError: When the class has no name, no kinds, or its name is taken by another class.
    """
    if not cls.name or ":" in cls.name or not cls.kinds:
        raise ValueError(f"{cls.__name__}: a judge class needs a name without ':' and the item kinds it applies to")
    other = _JUDGES.get(cls.name)
    if other is not None and other is not cls:
        raise ValueError(f"judge name {cls.name!r} is taken by {other.__name__}")
    _JUDGES[cls.name] = cls
    return cls


def unregister_judge(name: str) -> None:
    """Remove a registered judge class (tests and plugins that registered one for a while)."""
    _JUDGES.pop(name, None)


def registered_judges() -> dict[str, type[BaseJudge]]:
    """The registered judge classes by name, in registration order."""
    return dict(_JUDGES)


for _builtin in (RuleJudge, ProxyJudge, OpenAIJudge, HFJudge, ASRJudge, SourcesJudge, StrategyJudge):
    register_judge(_builtin)


def _spec_forms() -> str:
    forms = [
        cls.usage_text or (f"{cls.name}:<argument>" if cls.takes_argument else cls.name) for cls in _JUDGES.values()
    ]
    return ", ".join(forms[:-1]) + f" or {forms[-1]}" if len(forms) > 1 else "".join(forms)


def judge_class(spec: str) -> type[BaseJudge]:
    """The class of the judge a spec names, with the spec checked (see :func:`parse_judge_spec`).

    Raises:
        JudgeSpecError: For a spec that names no judge, or one its judge refuses.
    """
    name, sep, argument = spec.partition(":")
    cls = _JUDGES.get(name)
    if cls is not None and cls.takes_argument == bool(sep) and (argument or not cls.takes_argument):
        cls.check_spec(argument)
        return cls
    from airbench_nb.api_client import redact_url

    raise JudgeSpecError(f"judge spec {redact_url(spec)!r} not understood; use {_spec_forms()}")


def parse_judge_spec(spec: str) -> str:
    """Check a judge spec: ``rule``, ``proxy``, ``openai:<model>[@<url>]``, ``hf:<path>`` or a registered judge's.

    An ``openai:`` spec is checked as a model's is (:func:`airbench_nb.api_client.parse_openai_spec`): a URL as the
    model part (hint ``openai:MODEL@URL``), a base URL that is not http(s) or holds credentials are refused, and
    the message never repeats a secret.

    Returns:
        The spec, unchanged.

    Raises:
        JudgeSpecError: For a spec that names no judge, or an ``openai:`` spec that cannot be used.
    """
    judge_class(spec)
    return spec


def _class_of(spec: str) -> type[BaseJudge] | None:
    """The registered class of a spec's name, unchecked; None for a name no judge is registered under."""
    return _JUDGES.get(spec.partition(":")[0])


def scores_only(spec: str) -> bool:
    """Whether the judge a spec names gives scores whose ``raw`` is no judge's reply (the proxy).

    Its class's :attr:`~airbench_nb.judge.base.BaseJudge.scores_only`; False for a spec no registered judge has (a
    judge of older records).
    """
    cls = _class_of(spec)
    return cls is not None and cls.scores_only


def reads_spoken_answers(spec: str) -> bool:
    """Whether the judge a spec names reads the responses' spoken answers (``asr:``; its ``needs_audio``)."""
    cls = _class_of(spec)
    return cls is not None and cls.needs_audio


def labels_reasoning(spec: str) -> bool:
    """Whether the judge a spec names labels answers' reasoning strategy (``strategy:``) rather than judging them."""
    cls = _class_of(spec)
    return cls is not None and cls.labels_reasoning


def names_sources(spec: str) -> bool:
    """Whether the verdicts of the judge a spec names store the names read in each answer (``sources``)."""
    cls = _class_of(spec)
    return cls is not None and cls.names_sources


def llm_judges(specs: Iterable[str]) -> list[str]:
    """The specs among ``specs`` whose judge asks a language model (``openai:``, ``hf:``), in their order."""
    return [spec for spec in specs if (cls := _class_of(spec)) is not None and cls.llm]


def deciding_judges(tier: str, present: Iterable[str] = ()) -> list[str]:
    """The judges whose verdicts decide a tier's answers in the tiered benchmark, preferred first.

    The LLM judges among ``present`` that decide the tier (in the order given), then the registered offline rules
    that do (:attr:`~airbench_nb.judge.base.BaseJudge.decides_tiers`): ``rule`` for tier A, ``sources`` for tier D.

    Args:
        tier: ``A`` or ``D`` (tiers B and C are rankings: no judge decides them).
        present: Judge specs at hand (a run's).
    """
    llm = [spec for spec in llm_judges(present) if tier in _JUDGES[spec.partition(":")[0]].decides_tiers]
    rules = [name for name, cls in _JUDGES.items() if not cls.takes_argument and tier in cls.decides_tiers]
    return [*llm, *rules]


def judge_applies(spec: str, kind: str) -> bool:
    """Whether the judge a spec names judges items of ``kind`` (``foundation``, ``chat``), without building it.

    Raises:
        JudgeSpecError: For a spec that names no judge.
    """
    return judge_class(spec).applies_to(kind)


def load_judge(spec: str, **options: Any) -> Judge:
    """Build the judge a spec names.

    Args:
        spec: A judge spec (see :func:`parse_judge_spec`).
        **options: Judge options (``foundation_mode``, ``concurrency``, ``cache``, ``prices``, ``timeout_s``,
            ``api_key_env``, ``batch_api``, ``batch_poll_s``, ...); options a judge does not take are ignored with a
            debug message, as are options given as None.

    Returns:
        A :class:`~airbench_nb.judge.base.Judge`.

    Raises:
        JudgeSpecError: For a spec that names no judge.
    """
    cls = judge_class(spec)
    accepted = inspect.signature(cls).parameters
    kwargs = {k: v for k, v in options.items() if k in accepted and k != "spec" and v is not None}
    ignored = sorted(set(options) - set(kwargs))
    if ignored:
        logger.debug("judge %s: ignoring options %s", spec, ", ".join(ignored))
    return cls(spec, **kwargs)
