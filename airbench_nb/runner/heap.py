"""Slack kept at the top of the C heap while models are asked, so that the big buffers of each request reuse memory.

Every request of an API run makes a few buffers of hundreds of kilobytes (a 5 s clip's wav bytes, its base64 and the
body: about 0.6 MB; 3.5 MB for 30 s) and frees them when its batch is written. glibc's ``malloc`` gives memory past
its top back to the system as soon as more than its trim threshold is free there, so the next batch's buffers are
fresh pages again: a page fault per 4 KB, about 0.1 ms per buffer, more than encoding the clip. With 64 MB of slack
kept at the top (``M_TOP_PAD``) the freed memory is used again: measured on the 2-core CI machine, the ``openai:``
client's CPU per 5 s item at concurrency 1 fell from about 2.1 to 1.6 ms (docs/scaling.md). The cost is at most that
much memory held by the process beyond what it uses.

Only on Linux with glibc (``mallopt``); a ``MALLOC_TOP_PAD_`` in the environment (glibc's own setting) is left as the
user set it. Elsewhere nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

logger = logging.getLogger(__name__)

M_TOP_PAD = -2
"""glibc's ``mallopt`` parameter number of the slack kept at the heap's top."""

HEAP_SLACK_BYTES = 64 << 20
"""Slack kept at the heap's top while a run asks a model."""

_set: bool | None = None


def keep_heap_slack(nbytes: int = HEAP_SLACK_BYTES) -> bool:
    """Keep ``nbytes`` of slack at the top of the C heap (glibc's ``M_TOP_PAD``), once per process.

    Returns:
        Whether the slack is kept: False off Linux, without glibc's ``mallopt``, or when ``MALLOC_TOP_PAD_`` is set
        in the environment (the user's choice stands).
    """
    global _set
    if _set is not None:
        return _set
    _set = False
    if not sys.platform.startswith("linux") or "MALLOC_TOP_PAD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _set = mallopt(M_TOP_PAD, int(nbytes)) == 1
    logger.debug("heap slack of %d bytes %s", nbytes, "kept" if _set else "refused by mallopt")
    return _set
