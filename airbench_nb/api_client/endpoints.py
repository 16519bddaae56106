"""Endpoints and keys: which URL a spec names, which key (if any) goes to it, and URLs that are refused.

The rules, stated once:

- ``openai:MODEL@URL`` names the endpoint ``URL``; ``openai:MODEL`` names OpenAI's (``https://api.openai.com/v1``),
  or the URL in ``OPENAI_BASE_URL`` when that is set (as the ``openai`` package does). A model part that is itself
  a URL (``openai:http://host:8000/v1``) is refused with the hint ``openai:MODEL@URL``.
- ``openai:MODEL@URL1,URL2,...`` names several replicas of one model (:func:`parse_openai_replicas`): each entry is
  checked as a single URL is, and each gets its key by the rules below, as if it were named alone. An empty entry
  or the same endpoint twice is refused. (Only ``openai:`` models take a list: :mod:`.replicas`.)
- A URL must be ``http://`` or ``https://`` with a host. A URL carrying credentials (``https://user:pass@host``, or
  a query parameter named like a key, token, secret, password or signature) is refused, never used: it would be
  copied into every record's model spec, file names (slugs) and logs. Keys belong in environment variables.
- Keys go only where named. With ``api_key_env`` (``--api-key-env NAME``) the value of that variable goes to the
  endpoint, whatever it is; unset, it is an error before anything is sent (for a local endpoint: a warning, and no
  key). Without it,
  ``OPENAI_API_KEY`` goes only to the default endpoint (OpenAI's, or ``OPENAI_BASE_URL``) or to an ``@URL`` on
  ``api.openai.com``, and never to a local one; any other endpoint gets no key (the placeholder ``EMPTY``, vLLM's
  "no auth"), and a 401 from it says how to name one.
- Local (see :func:`is_local_url`): loopback (``127.0.0.0/8``, ``::1``, ``localhost``, ``*.localhost``), the
  unspecified ``0.0.0.0``, private networks (RFC 1918: ``10/8``, ``172.16/12``, ``192.168/16``; IPv6 ``fc00::/7``),
  link-local (``169.254/16``, ``fe80::/10``) and mDNS names (``*.local``). Names are not resolved: ``gpu-box`` on
  a LAN counts as remote (it gets no key unless named either way).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlparse

from airbench_nb.api_client.errors import EndpointError

logger = logging.getLogger(__name__)

OPENAI_ENDPOINT = "https://api.openai.com/v1"
"""OpenAI's endpoint: where ``openai:MODEL`` goes when ``OPENAI_BASE_URL`` is not set."""
OPENAI_HOST = "api.openai.com"
"""The host that gets ``OPENAI_API_KEY`` when no key variable is named."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""Variable that replaces OpenAI's endpoint for specs without ``@URL`` (the ``openai`` package's convention)."""
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
"""Variable holding the key of the default endpoint."""
NO_KEY_PLACEHOLDER = "EMPTY"
"""Key sent where no key goes (vLLM's convention for "no auth"; the ``openai`` package needs some string)."""
LOCAL_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in (
        "127.0.0.0/8",
        "0.0.0.0/32",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "::1/128",
        "::/128",
        "fc00::/7",
        "fe80::/10",
    )
)
"""Addresses that count as local: loopback, unspecified, RFC 1918 private, IPv6 unique-local, link-local."""
LOCAL_NAME_SUFFIXES = (".localhost", ".local")
"""Host name endings that count as local (``localhost`` itself too)."""
_URL_AS_MODEL = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://|(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\])(?::\d+)?(?:/|$))"
)
_SECRET_QUERY = re.compile(r"key|token|secret|passw|auth|sig", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _host(url: str | None) -> str:
    try:
        return (urlparse(url).hostname or "").lower().rstrip(".") if url else ""
    except ValueError:
        return ""


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine or a private network (see the module docstring for the list)."""
    host = _host(url)
    if not host:
        return False
    if host == "localhost" or host.endswith(LOCAL_NAME_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    address = mapped or address
    return any(address in net for net in LOCAL_NETWORKS if net.version == address.version)


def redact_url(text: str) -> str:
    """``text`` (a URL or URL-like string) with any ``user:pass@`` and key-like query values replaced by ``***``."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    shown = f"{scheme}{sep}{authority}{slash}{path}"
    return re.sub(r"([?&][^=&#]*(?:key|token|secret|passw|auth|sig)[^=&#]*=)[^&#]*", r"\1***", shown, flags=re.I)


def check_base_url(url: str, where: str) -> str:
    """Check an endpoint URL and return it without a trailing ``/``.

    Args:
        url: The URL (``http(s)://host[:port]/v1``).
        where: Where it came from, for the message (``openai:MODEL@URL``, ``OPENAI_BASE_URL``).

    Raises:
        EndpointError: Not http(s), no host, or credentials in it (the message never repeats them).
    """
    url = url.strip()
    shown = redact_url(url)
    try:
        parsed = urlparse(url)
        parsed.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise EndpointError(f"{where}: base URL {shown!r} is not a valid URL ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise EndpointError(f"{where}: base URL {shown!r} must start with http:// or https://")
    if "@" in parsed.netloc:
        raise EndpointError(
            f"{where}: base URL {shown!r} holds credentials (user:password@host), which would be copied into "
            "records, file names and logs; remove them and put the key in an environment variable named with "
            "--api-key-env NAME (api_key_env=)"
        )
    if any(_SECRET_QUERY.search(name) for name, _ in parse_qsl(parsed.query, keep_blank_values=True)):
        raise EndpointError(
            f"{where}: base URL {shown!r} holds credentials in its query, which would be copied into records, file "
            "names and logs; remove them and put the key in an environment variable named with --api-key-env NAME"
        )
    if not parsed.hostname:
        raise EndpointError(f"{where}: base URL {shown!r} has no host")
    return url.rstrip("/")


def parse_openai_spec(rest: str) -> tuple[str, str | None]:
    """Split the part of an ``openai:`` spec after the colon into ``(model, base_url or None)``, checked.

    Raises:
        EndpointError: No model, a URL where the model belongs, or a bad base URL (see :func:`check_base_url`).
    """
    model, sep, base_url = rest.partition("@")
    model = model.strip()
    if _URL_AS_MODEL.match(model.lower()):
        raise EndpointError(
            f"openai:{redact_url(rest)}: the model part is a URL; write openai:MODEL@URL "
            "(e.g. openai:Qwen/Qwen2-Audio-7B-Instruct@http://127.0.0.1:8000/v1)"
        )
    if not model:
        raise EndpointError(f"openai:{redact_url(rest)}: no model name; write openai:MODEL or openai:MODEL@URL")
    if not sep:
        return model, None
    return model, check_base_url(base_url, where=f"openai:{model}@URL")


def _url_identity(url: str) -> tuple[str, str, int | None, str, str]:
    """What makes two base URLs the same endpoint.

    Scheme and host in lower case, the port (default ones filled in), the path without a trailing ``/``, the query.
    """
    parsed = urlparse(url)
    default = {"http": 80, "https": 443}.get(parsed.scheme.lower())
    return (
        parsed.scheme.lower(),
        _host(url),
        parsed.port or default,
        parsed.path.rstrip("/"),
        parsed.query,
    )


def parse_openai_replicas(rest: str) -> tuple[str, list[str]]:
    """Split an ``openai:`` spec's rest into ``(model, base URLs)``; several URLs (``@URL1,URL2``) are replicas.

    A rest with no ``,`` after its ``@`` is read by :func:`parse_openai_spec`, unchanged (``[]`` for no
    ``@URL``, ``[URL]`` for one). With a ``,``, every entry is checked as a single URL is (:func:`check_base_url`),
    and the list is refused when an entry is empty or names the same endpoint as an earlier one (case of scheme
    and host, default ports and a trailing ``/`` do not make two URLs differ).

    Raises:
        EndpointError: One line naming the entry (by position, credentials redacted) and the fix.
    """
    model_part, sep, tail = rest.partition("@")
    if not sep or "," not in tail:
        model, url = parse_openai_spec(rest)
        return model, [url] if url else []
    model, _ = parse_openai_spec(model_part)  # the model part's own checks (no model, a URL as the model)
    entries = tail.split(",")
    where = f"openai:{model}@URL1,URL2,..."
    urls: list[str] = []
    first_seen: dict[tuple[str, str, int | None, str, str], int] = {}
    for number, entry in enumerate(entries, start=1):
        if not entry.strip():
            raise EndpointError(
                f"{where}: entry {number} of {len(entries)} is empty; write the base URLs separated by single "
                "commas, with no comma at the start or the end"
            )
        url = check_base_url(entry, where=f"{where} entry {number} of {len(entries)}")
        identity = _url_identity(url)
        if identity in first_seen:
            raise EndpointError(
                f"{where}: entry {number} ({redact_url(url)!r}) repeats entry {first_seen[identity]}; list each "
                "replica once (its requests would be counted twice)"
            )
        first_seen[identity] = number
        urls.append(url)
    return model, urls


def check_key_env(name: str) -> str:
    """Check that ``name`` looks like an environment variable's name (never a key), and return it.

    Raises:
        EndpointError: Not a name (the message does not repeat it: it may be the key itself).
    """
    if not _ENV_NAME.match(name or ""):
        raise EndpointError(
            "--api-key-env (api_key_env=) takes the NAME of an environment variable holding the key (letters, "
            f"digits and _), not the key itself; got {len(name or '')} characters that are not a name"
        )
    return name


@dataclass(frozen=True)
class Endpoint:
    """The endpoint a client talks to, and the key variable (if any) whose value goes to it."""

    url: str
    """The base URL requests go to (``.../v1``, no trailing slash, never with credentials)."""
    source: Literal["spec", "OPENAI_BASE_URL", "default"]
    """Where the URL came from: the spec's ``@URL``, ``OPENAI_BASE_URL``, or OpenAI's default."""
    key_variable: str | None
    """The environment variable whose value is sent as the key; None: no key is sent (``EMPTY``)."""
    key_named: bool
    """Whether ``key_variable`` was named by the user (``api_key_env``), rather than chosen by the rules."""

    @property
    def local(self) -> bool:
        """Whether the endpoint is local (see :func:`is_local_url`)."""
        return is_local_url(self.url)

    @property
    def host(self) -> str:
        """The endpoint's host name."""
        return _host(self.url)


def resolve_endpoint(base_url: str | None, api_key_env: str | None = None) -> Endpoint:
    """The endpoint for ``base_url`` (None: ``OPENAI_BASE_URL`` or OpenAI's) and the key that goes to it.

    Args:
        base_url: The spec's ``@URL``, or None.
        api_key_env: The variable the user named for the key (``--api-key-env``), or None for the default rules.

    Raises:
        EndpointError: A bad URL or variable name.
    """
    if base_url:
        url, source = check_base_url(base_url, where="base URL"), "spec"
    elif os.environ.get(BASE_URL_ENV, "").strip():
        url, source = check_base_url(os.environ[BASE_URL_ENV], where=BASE_URL_ENV), BASE_URL_ENV
    else:
        url, source = OPENAI_ENDPOINT, "default"
    if api_key_env is not None:
        return Endpoint(url, source, check_key_env(api_key_env), True)  # type: ignore[arg-type]
    if is_local_url(url):
        variable = None
    elif source != "spec" or _host(url) == OPENAI_HOST:
        variable = DEFAULT_KEY_ENV
    else:
        variable = None
    return Endpoint(url, source, variable, False)  # type: ignore[arg-type]
