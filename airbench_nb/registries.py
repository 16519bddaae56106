"""What every registry of the kit shares: looking a name up, and refusing an unknown one with the known ones listed.

The kit's registries (item kinds, builder parts, benchmarks, metrics, analysis and page sections) are plain dicts in
the modules that own them; their ``*_for`` functions look names up with :func:`lookup`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


def lookup(registry: Mapping[str, T], name: str, what: str, *, sort: bool = False) -> T:
    """The entry of ``name`` in ``registry``.

    Args:
        registry: The registry (name to entry, in registration order).
        name: The name looked up.
        what: What an entry is, for the message (``builder part``, ``metric``, ...).
        sort: List the known names sorted rather than in registration order.

    Raises:
        KeyError: ``no <what> '<name>'; registered: <the known names>``.
    """
    try:
        return registry[name]
    except KeyError:
        known = sorted(registry) if sort else list(registry)
        raise KeyError(f"no {what} {name!r}; registered: {', '.join(known)}") from None


__all__ = ["lookup"]
