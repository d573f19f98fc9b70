"""Retries: bounded, with backoff, and never where a retry could duplicate."""

from __future__ import annotations

import time
from typing import List

import httpx
import pytest

from mnemo_client import AsyncMnemoClient, MnemoClient, RetryPolicy, TransportError, Unavailable

from .conftest import Server, free_port
from .proxy import FAIL, FORWARD_THEN_FAIL, FaultProxy, rate_limit

FAST = RetryPolicy(max_retries=3, backoff_base=0.01, backoff_max=0.05)


def _message_received(client: MnemoClient, subject: str) -> int:
    return len(client.list_audit(subject=subject, type="MessageReceived").events)


def test_message_post_survives_two_503s_and_is_stored_once(server: Server, tenant: str, subject: str) -> None:
    # The first attempt reaches the server but its answer is lost; the second
    # fails before the server; the third goes through.
    with FaultProxy(server.url, [FORWARD_THEN_FAIL, FAIL]) as proxy:
        with server.client(tenant, url=proxy.url, retry=FAST) as client:
            accepted = client.post_messages(subject, [{"role": "user", "content": "I live in Lyon"}])

    assert len(proxy.seen) == 3 and proxy.forwarded == 2
    ids = [seen.json()["messages"][0]["id"] for seen in proxy.seen]  # type: ignore[index]
    assert ids[0] and ids == [ids[0]] * 3, "every attempt must carry the same message id"
    assert len({seen.headers["X-Request-Id"] for seen in proxy.seen}) == 1
    # The server had recorded the first attempt: the retry is a duplicate.
    assert (accepted.accepted, accepted.duplicates) == (0, 1)
    assert accepted.events[0].id == ids[0]

    with server.client(tenant) as direct:
        assert _message_received(direct, subject) == 1
        assert [m.message_id for m in direct.export_subject(subject).messages] == [ids[0]]


def test_create_memory_is_not_retried_after_it_may_have_been_processed(
    server: Server, tenant: str, subject: str
) -> None:
    with FaultProxy(server.url, [FORWARD_THEN_FAIL]) as proxy:
        with server.client(tenant, url=proxy.url, retry=FAST) as client:
            with pytest.raises(Unavailable) as caught:
                client.create_memory(subject, "Likes hiking", "preference")
    assert caught.value.status == 503
    assert len(proxy.seen) == 1
    with server.client(tenant) as direct:
        created = direct.list_audit(subject=subject, type="MemoryCreated").events
    assert len(created) == 1, "the one attempt was stored, and no retry made a second memory"


def test_rate_limit_is_retried_even_for_writes_after_retry_after(server: Server, tenant: str, subject: str) -> None:
    with FaultProxy(server.url, [rate_limit(1)]) as proxy:
        with server.client(tenant, url=proxy.url, retry=FAST) as client:
            started = time.monotonic()
            memory = client.create_memory(subject, "Likes hiking", "preference")
            elapsed = time.monotonic() - started
    assert elapsed >= 1.0, "Retry-After must be honoured"
    assert len(proxy.seen) == 2 and proxy.forwarded == 1
    with server.client(tenant) as direct:
        assert direct.get_memory(memory.id).content == "Likes hiking"
        assert len(direct.list_audit(subject=subject, type="MemoryCreated").events) == 1


def test_retries_are_bounded(server: Server, tenant: str, subject: str) -> None:
    with FaultProxy(server.url, [FAIL] * 10) as proxy:
        with server.client(tenant, url=proxy.url, retry=RetryPolicy(max_retries=2, backoff_base=0.01)) as client:
            with pytest.raises(Unavailable):
                client.list_memories(subject)
    assert len(proxy.seen) == 3


def test_no_retries_when_disabled(server: Server, tenant: str, subject: str) -> None:
    with FaultProxy(server.url, [FAIL]) as proxy:
        with server.client(tenant, url=proxy.url, retry=RetryPolicy(max_retries=0)) as client:
            with pytest.raises(Unavailable):
                client.list_memories(subject)
    assert len(proxy.seen) == 1


async def test_async_client_retries_the_same_way(server: Server, tenant: str, subject: str) -> None:
    with FaultProxy(server.url, [FAIL, FORWARD_THEN_FAIL]) as proxy:
        async with server.async_client(tenant, url=proxy.url, retry=FAST) as client:
            accepted = await client.post_messages(subject, [{"role": "user", "content": "I live in Lyon"}])
            assert accepted.duplicates == 1
            events = await client.list_audit(subject=subject, type="MessageReceived")
    assert len(proxy.seen) == 4  # three posts and the audit read
    assert len(events.events) == 1


class CountingTransport(httpx.BaseTransport):
    def __init__(self) -> None:
        self.attempts: List[str] = []
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts.append(request.url.path)
        return self._inner.handle_request(request)


def test_connection_errors_are_retried_then_raised() -> None:
    transport = CountingTransport()
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    http = httpx.Client(transport=transport)
    with MnemoClient(closed, "token", http_client=http, retry=RetryPolicy(max_retries=2, backoff_base=0.01)) as client:
        with pytest.raises(TransportError) as caught:
            # Not idempotent, but a refused connection never reached a server.
            client.create_memory("user-1", "x", "fact")
    assert caught.value.status is None
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert len(transport.attempts) == 3
    http.close()


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=2.0)
    for retry, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (5, 2.0)]:
        delays = [policy.delay(retry) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling / 2, "jitter spans the whole window"
    assert policy.delay(0, retry_after=7) == 7
    assert RetryPolicy(max_retry_after=5).delay(0, retry_after=100) == 5


async def test_async_connection_errors_are_bounded() -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    async with AsyncMnemoClient(closed, "token", retry=RetryPolicy(max_retries=1, backoff_base=0.01)) as client:
        with pytest.raises(TransportError):
            await client.healthz()
