"""The ``strategy:<LLM judge spec>`` judge: an LLM labels each tiered answer's reasoning strategy and confidence.

The tiered benchmark labels ~9,000 chains of thought with a second LLM (detailed acoustic analysis, holistic pattern
match, elimination, direct assertion, no justification) and asks whether strategy predicts accuracy once class
difficulty is held fixed. This judge does the labelling through the judge protocol: it applies to the closed-set
``sound_source`` items, sends :func:`~airbench_nb.prompts.strategy_judge_messages` (versioned, the answer fenced as
data) through the LLM judge its spec names (``strategy:openai:gpt-4o-mini@http://...``, ``strategy:hf:/path``: the
same client, cache, retries, costs and Batch API), and writes the label into
:attr:`~airbench_nb.records.Verdict.reasoning`. The reasoning analysis
(:func:`~airbench_nb.analysis.tiered_run.tiered_run`) uses these labels when the run has them, the offline keyword
proxy otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from airbench_nb.judge.base import JUDGE_CALL_FAILED, BaseJudge, JudgeSpecError, Task
from airbench_nb.judge.llm import HFJudge, OpenAIJudge
from airbench_nb.prompts import STRATEGY_JUDGE_VERSION, parse_strategy_reply, prompt_hash, strategy_judge_messages
from airbench_nb.records import ReasoningLabel, Verdict

logger = logging.getLogger(__name__)


class StrategyJudge(BaseJudge):
    """Labels reasoning strategies with an LLM judge (see the module docstring).

    Args:
        spec: ``strategy:<LLM judge spec>`` (``openai:...`` or ``hf:...``).
        concurrency, cache, prices, timeout_s, api_key_env, batch_api, batch_poll_s: The inner judge's options.
    """

    name: ClassVar[str] = "strategy"
    takes_argument: ClassVar[bool] = True
    usage_text: ClassVar[str] = "strategy:<openai:... or hf:... judge spec>"
    kinds: ClassVar[frozenset[str]] = frozenset({"sound_source"})
    labels_reasoning: ClassVar[bool] = True
    """Its verdicts label answers' reasoning strategy and confidence."""

    def __init__(
        self,
        spec: str,
        *,
        concurrency: int = 8,
        cache: str | Path | None = None,
        prices: Any = None,
        timeout_s: float = 60.0,
        api_key_env: str | None = None,
        batch_api: bool = False,
        batch_poll_s: float = 30.0,
    ) -> None:
        """Build the inner LLM judge (no request is sent)."""
        super().__init__(spec)
        inner = spec.partition(":")[2]
        self.check_spec(inner)
        if inner.startswith("openai:"):
            self.inner: Any = OpenAIJudge(
                inner,
                concurrency=concurrency,
                cache=cache,
                prices=prices,
                timeout_s=timeout_s,
                api_key_env=api_key_env,
                batch_api=batch_api,
                batch_poll_s=batch_poll_s,
            )
        else:
            self.inner = HFJudge(inner)

    @classmethod
    def check_spec(cls, argument: str) -> None:
        """Refuse an inner spec that is not an LLM judge's (``openai:...`` or ``hf:...``).

        Raises:
            JudgeSpecError: In one line that repeats no secret.
        """
        prefix, _, rest = argument.partition(":")
        inner = {"openai": OpenAIJudge, "hf": HFJudge}.get(prefix)
        if inner is None or not rest:
            raise JudgeSpecError("strategy: needs an LLM judge spec (openai:<model>[@<base_url>] or hf:<path>)")
        inner.check_spec(rest)

    def decide(self, task: Task) -> Verdict | None:
        """Set the task's messages (the LLM decides every answer)."""
        task.messages = strategy_judge_messages(task.question, task.answer or "")
        return None

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """One verdict per task with the label read from the LLM's reply.

        Raises:
            Exception: A fatal API error of the inner judge propagates.
        """
        replies = self.inner.complete(tasks, batch_file=batch_file)
        verdicts = []
        for task, (text, error, tokens, cached) in zip(tasks, replies, strict=True):
            common: dict[str, Any] = {
                "raw": text,
                "prompt_hash": prompt_hash(repr(task.messages) + STRATEGY_JUDGE_VERSION),
                "input_tokens": tokens[0],
                "output_tokens": tokens[1],
                "cached": cached,
            }
            if error is not None or text is None:
                verdicts.append(task.verdict(self.spec, parse_error=f"{JUDGE_CALL_FAILED}: {error}", **common))
                continue
            read = parse_strategy_reply(text)
            if isinstance(read, str):
                verdicts.append(task.verdict(self.spec, parse_error=read, **common))
            else:
                label = ReasoningLabel(strategy=read[0], confidence=read[1])  # type: ignore[arg-type]
                verdicts.append(task.verdict(self.spec, reasoning=label, **common))
        return verdicts

    def estimate(self, tasks: Sequence[Task]) -> str:
        """The inner judge's estimate for the tasks' requests."""
        return str(self.inner.estimate(tasks))

    def usage(self) -> dict[str, Any]:
        """The inner judge's usage."""
        return dict(self.inner.usage())
