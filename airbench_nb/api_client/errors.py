"""The client's exceptions.

:class:`FatalAPIError` is the one a caller must stop on: the command cannot go on (every request would fail the
same way), so item loops stop at once instead of writing one error record per item, and the CLI prints its
one-line message and exits non-zero. Its subclasses say why: :class:`MissingAPIKeyError` (no key for an endpoint
that needs one) and :class:`InvalidParameterError` (a nonsense generation parameter; also a ``ValueError``, so the
CLI exits 2 as for any bad input). :class:`EndpointError` is a spec or base URL refused before anything is built.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class APIClientError(RuntimeError):
    """A problem with the client's configuration or with a batch as a whole (not one request)."""


class FatalAPIError(APIClientError):
    """An error no retry and no other request can get past: stop the command (never record it per item).

    Raised for 401/403 answers, a 404 saying the model is unknown before that model ever answered (a wrong model
    name: every request would get it), a missing key, an endpoint that refused every connection before ever answering,
    and nonsense parameters. The message is one line that names the endpoint and the cause, never the key, e.g.
    ``401 Unauthorized from http://127.0.0.1:8000/v1: check OPENAI_API_KEY (server: Incorrect API key)``.

    Args:
        message: The one-line message.
        endpoint: The endpoint's URL (never with credentials: those are refused).
        status: The HTTP status that made it fatal, when there was one.
    """

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.endpoint = endpoint
        self.status = status


class MissingAPIKeyError(FatalAPIError):
    """No key in the environment for an endpoint that needs one (the message names the variable, never a value)."""


class InvalidParameterError(FatalAPIError, ValueError):
    """A request or generation parameter that makes no sense (NaN, infinite, negative temperature, ...)."""


class EndpointError(ValueError):
    """A spec, base URL or key variable name that cannot be used (a URL as the model, credentials in a URL, ...)."""


class CacheError(ValueError):
    """A cache file that cannot be opened for a reason other than corruption (a folder, no permission, locked)."""


class MalformedResponseError(Exception):
    """A 200 answer whose body is not a chat completion (not JSON, no ``choices``, empty): retried."""


class AttemptTimeoutError(TimeoutError):
    """An attempt got no complete answer within its deadline (headers and whole body): retried."""
