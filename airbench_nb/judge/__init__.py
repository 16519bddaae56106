"""Judges: rule-based choice extraction, LLM judges for Foundation and Chat, and the offline Chat proxy.

Every judge implements :class:`Judge` and is built from a spec string by :func:`load_judge`, as models are by
:func:`airbench_nb.models.load_model`; :mod:`airbench_nb.judge.run` holds the resumable loop that writes verdicts.
"""

from airbench_nb.judge.base import CHAT_ORDERS, JUDGE_CALL_FAILED, BaseJudge, Judge, JudgeSpecError, Order, Task
from airbench_nb.judge.registry import (
    judge_applies,
    judge_class,
    load_judge,
    parse_judge_spec,
    register_judge,
    registered_judges,
    unregister_judge,
)

__all__ = [
    "CHAT_ORDERS",
    "JUDGE_CALL_FAILED",
    "BaseJudge",
    "Judge",
    "JudgeSpecError",
    "Order",
    "Task",
    "judge_applies",
    "judge_class",
    "load_judge",
    "parse_judge_spec",
    "register_judge",
    "registered_judges",
    "unregister_judge",
]
