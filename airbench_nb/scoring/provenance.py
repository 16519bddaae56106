"""Which judge a Chat score rests on, and whether it can be read beside AIR-Bench's published table.

AIR-Bench's published Chat scores were judged by OpenAI's ``gpt-4-0125-preview`` (Yang et al., 2024; the model is
retired). A Chat score judged by anything else (another GPT-4-class model, an open judge, the offline proxy) measures
the same answers on another judge's scale: it is labelled :data:`NOT_COMPARABLE` wherever the kit shows it (the
landing page's main table and warnings, ``leaderboard.md``, ``airbench-nb score``). A substitute judge's scores can
be mapped onto the reference judge's scale where both judged a shared set (:mod:`airbench_nb.analysis.judge_mapping`);
mapped scores are flagged as mapped, never passed off as the reference judge's.

A spec names the published judge when its model is :data:`PUBLISHED_CHAT_MODEL`, whatever endpoint serves it
(``openai:gpt-4-0125-preview`` or ``openai:gpt-4-0125-preview@<base_url>``): the kit cannot tell a server that serves
another model under that name, and says so in the docs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

PUBLISHED_CHAT_MODEL = "gpt-4-0125-preview"
"""The model that judged AIR-Bench's published Chat scores."""
PUBLISHED_CHAT_JUDGE = f"openai:{PUBLISHED_CHAT_MODEL}"
"""Its judge spec."""
NOT_COMPARABLE = "not comparable with the published table"
"""The label of a Chat score judged by any other judge."""


def published_judge(spec: str | None) -> bool:
    """Whether a Chat judge spec is AIR-Bench's own (``openai:gpt-4-0125-preview``, at any endpoint)."""
    if not spec:
        return False
    prefix, _, rest = spec.partition(":")
    return prefix == "openai" and rest.split("@", 1)[0] == PUBLISHED_CHAT_MODEL


def provenance_text(judges: list[str], quote: Callable[[str], str] = str) -> str:
    """One sentence on the Chat judges of a table: which are AIR-Bench's judge, which are not comparable.

    Args:
        judges: The Chat judges as the table names them (specs, or the proxy's short name); ``-`` and empty ones
            (rows without Chat scores) are ignored.
        quote: How a judge's name is written into the sentence (Markdown: :func:`airbench_nb.markup.md_code`, so
            that a name is shown as it is, never as markup).

    Returns:
        The sentence, or "" when no judge is given.
    """
    named = [j for j in dict.fromkeys(judges) if j and j != "-"]
    if not named:
        return ""
    own = [j for j in named if published_judge(j)]
    other = [j for j in named if not published_judge(j)]
    parts = []
    if own:
        names = ", ".join(quote(j) for j in own)
        parts.append(f"Chat scores judged by {names}: AIR-Bench's judge, comparable with the published table")
    if other:
        parts.append(
            f"Chat scores judged by {', '.join(quote(j) for j in other)}: {NOT_COMPARABLE} (AIR-Bench's were judged by "
            f"{PUBLISHED_CHAT_MODEL})"
        )
    return "; ".join(parts) + "."
