"""How the client posts a chat body: straight through the SDK client's own HTTP client, raising what the SDK raises.

Every check runs both ways against the real local server: the direct post (:class:`_DirectPost`, the default) and
the SDK's ``post`` (where an SDK lacks what the direct post needs), and asks that they agree.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import openai
import pytest

from airbench_nb.api_client import APIClient, ChatRequest, FatalAPIError
from airbench_nb.api_client import client as client_module
from airbench_nb.api_client.helpers import is_retryable, retry_after_s
from tests.openai_server import Fault, OpenAITestServer, unused_base_url

FAKE_KEY = "sk-test-DO-NOT-LEAK-http-0123456789"
PATHS = ("direct", "sdk-post")


@pytest.fixture
def server():
    with OpenAITestServer() as srv:
        yield srv


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AIRBENCH_TEST_KEY", FAKE_KEY)
    return FAKE_KEY


def chat(text: str, model: str = "judge-mini") -> ChatRequest:
    return ChatRequest(model, [{"role": "user", "content": text}], {"temperature": 0.0})


def one_attempt(client: APIClient, request: ChatRequest, path: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What one :meth:`APIClient.send` returns or raises, posted the way ``path`` says."""

    async def go() -> Any:
        session = client.async_client()
        try:
            return await client.send(session, request)
        except Exception as exc:  # noqa: BLE001 - the test compares what was raised
            return exc
        finally:
            await session.close()

    with monkeypatch.context() as patch:
        if path == "sdk-post":
            patch.setattr(client_module._DirectPost, "of", classmethod(lambda cls, session: None))
        return asyncio.run(go())


def test_the_direct_post_is_used_and_sends_the_key_the_sdk_would(server, fake_key, caplog):
    caplog.set_level(logging.DEBUG)
    client = APIClient(base_url=server.base_url, api_key_env="AIRBENCH_TEST_KEY", timeout_s=5.0)
    session = client.async_client()
    direct = client_module._DirectPost.of(session)
    assert direct is not None and direct.url == f"{server.base_url}/chat/completions"
    assert FAKE_KEY not in repr(direct)
    [result] = client.run_sync([chat("hello there")])
    assert result.ok and result.text == "judge-mini heard no audio: hello there"
    assert server.seen.authorization == {f"Bearer {FAKE_KEY}"}  # the SDK's header, the key from the variable
    assert client_module._DirectPost.of(client._loop.session) is not None  # the run went the direct way
    client.close()
    asyncio.run(session.close())
    assert FAKE_KEY not in caplog.text and FAKE_KEY not in repr(client)


@pytest.mark.parametrize(
    ("fault", "kind", "retried"),
    [
        (Fault("429", retry_after="7"), openai.RateLimitError, True),
        (Fault("500"), openai.InternalServerError, True),
        (Fault("503", retry_after_ms="250"), openai.InternalServerError, True),
        (Fault("400"), openai.BadRequestError, False),
    ],
)
def test_an_error_status_is_the_sdk_s_error_either_way(server, monkeypatch, fault, kind, retried):
    caught = {}
    for path in PATHS:
        server.reset()
        server.plan = {f"fault {path}": [fault]}
        client = APIClient(base_url=server.base_url, timeout_s=5.0)
        caught[path] = exc = one_attempt(client, chat(f"fault {path}"), path, monkeypatch)
        assert type(exc) is kind, (path, exc)
        assert exc.status_code == int(fault.kind) and is_retryable(exc) is retried
        assert client.fatal_error(exc, "judge-mini") is None  # retried or recorded, never a stop
        assert exc.body["message"].startswith("fault plan: ")  # the error object, as the SDK reads it
    direct, sdk = caught["direct"], caught["sdk-post"]
    assert str(direct) == str(sdk) and direct.body == sdk.body
    assert retry_after_s(direct) == retry_after_s(sdk) == {"429": 7.0, "503": 0.25}.get(fault.kind)


def test_a_401_and_an_unknown_model_stop_the_run_either_way(server, fake_key, monkeypatch):
    for path in PATHS:
        server.reset()
        server.plan = {f"echo-key {path}": [Fault("401")]}
        client = APIClient(base_url=server.base_url, api_key_env="AIRBENCH_TEST_KEY", timeout_s=5.0)
        exc = one_attempt(client, chat(f"echo-key {path}"), path, monkeypatch)
        assert isinstance(exc, FatalAPIError) and exc.status == 401, (path, exc)
        assert str(exc).startswith("401 Unauthorized") and FAKE_KEY not in str(exc) and "***" in str(exc)

        server.models = frozenset({"judge-mini"})
        client = APIClient(base_url=server.base_url, timeout_s=5.0)
        exc = one_attempt(client, chat(f"hello {path}", model="no-such-model"), path, monkeypatch)
        server.models = None
        assert isinstance(exc, FatalAPIError) and exc.status == 404 and "no-such-model" in str(exc), (path, exc)


def test_no_server_is_a_connection_error_either_way(monkeypatch):
    url = unused_base_url()
    for path in PATHS:
        client = APIClient(base_url=url, timeout_s=5.0, max_refusals=3)
        exc = one_attempt(client, chat("anyone?"), path, monkeypatch)  # the first refusal, counted by send
        assert type(exc) is openai.APIConnectionError and is_retryable(exc), (path, exc)
        assert client.fatal_error(exc) is None  # a second: retried
        assert isinstance(client.fatal_error(exc), FatalAPIError)  # the third, the endpoint never answered: a stop


def test_a_timeout_of_the_http_client_is_the_sdk_s_timeout(server, monkeypatch):
    server.plan = {"slow": [Fault("delay", delay_s=2.0)]}
    client = APIClient(base_url=server.base_url, timeout_s=5.0)

    async def go() -> BaseException:
        session = client.async_client().with_options(timeout=0.3)  # the HTTP client's own timeout, before 5 s
        try:
            await client.send(session, chat("slow"))
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            return exc
        finally:
            await session.close()
        raise AssertionError("no timeout")

    exc = asyncio.run(go())
    assert type(exc) is openai.APITimeoutError and is_retryable(exc)
    assert client.fatal_error(exc) is None
