"""The client's exceptions."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class APIClientError(RuntimeError):
    """A problem with the client's configuration or with a batch as a whole (not one request)."""


class MissingAPIKeyError(APIClientError):
    """No key in the environment for a remote endpoint (the message names the variable, never a value)."""


class MalformedResponseError(Exception):
    """A 200 answer whose body is not a chat completion (not JSON, no ``choices``, empty): retried."""
