"""Text from users, models and judges made safe to write into Markdown (and so into the HTML made from it).

Model and judge specs, questions, answers, judge replies, error messages and file names reach ``leaderboard.md``,
a run's ``README.md``, the grid page's Markdown and the cells notebook 05 displays as Markdown, which nbconvert
turns into HTML passing raw HTML through: a spec such as ``openai:<img src=x onerror=alert(1)>@URL`` would run in
the exported page. :func:`md_text` writes such text so that every renderer shows it as text: HTML's special
characters become entities, Markdown's are backslash-escaped, a line break becomes a space (a table cell stays
one cell). HTML pages made with Jinja2 autoescape or ``DataFrame.to_html(escape=True)`` need none of this.
"""

from __future__ import annotations

import re
from typing import Any

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
"""HTML's special characters and their entities."""
_MARKDOWN = re.compile(r"([\\`*_\[\]|])")
"""Markdown's active characters inside a line, escaped with a backslash: code, emphasis, links and images (no link
or image forms without its brackets) and table cells."""


def md_text(value: Any) -> str:
    """``value`` as Markdown text that renders as itself: no HTML, no link, no emphasis, one line.

    Args:
        value: Any value (converted with ``str``).

    Returns:
        The escaped text.
    """
    text = " ".join(str(value).split("\n"))
    text = _MARKDOWN.sub(r"\\\1", text)
    return "".join(_HTML.get(c, c) for c in text)


def md_code(value: Any) -> str:
    """``value`` as inline Markdown code (a run id, a commit, a path): backticks inside it cannot close it early."""
    text = " ".join(str(value).split("\n")).replace("`", "'")
    return f"`{text}`"


def md_link(path: Any) -> str:
    """A relative path as a Markdown link target: percent-encoded, so no ``)`` or space ends it and no scheme forms."""
    from urllib.parse import quote

    return quote(str(path), safe="/._-")
