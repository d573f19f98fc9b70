"""Error answers become exceptions carrying the status and the server's code."""

from __future__ import annotations

import uuid

import httpx
import pytest

from mnemo_client import (
    AuthError,
    BadRequest,
    Forbidden,
    MnemoClient,
    MnemoError,
    NotFound,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    Unprocessable,
    ValidationError,
)
from mnemo_client.errors import error_from_response

from .conftest import Server


def test_bad_token_is_unauthorized(server: Server, subject: str) -> None:
    with MnemoClient(server.url, "not-a-jwt") as client:
        with pytest.raises(Unauthorized) as caught:
            client.list_memories(subject)
    assert isinstance(caught.value, AuthError)
    assert caught.value.status == 401
    assert caught.value.code == "malformed_token"


def test_missing_token_is_unauthorized(server: Server, subject: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_TOKEN", raising=False)
    with MnemoClient(server.url) as client:
        with pytest.raises(Unauthorized) as caught:
            client.search(subject, "anything")
    assert caught.value.code == "missing_token"


def test_narrow_scope_is_forbidden(server: Server, tenant: str, subject: str) -> None:
    with server.client(tenant, scopes=["memories:read"]) as reader:
        assert reader.list_memories(subject).memories == []
        with pytest.raises(Forbidden) as caught:
            reader.post_messages(subject, [{"role": "user", "content": "hello"}])
    assert caught.value.status == 403
    assert caught.value.code == "insufficient_scope"


def test_subject_bound_token_cannot_reach_another_subject(server: Server, tenant: str, subject: str) -> None:
    with server.client(tenant, subject=subject) as bound:
        bound.post_messages(subject, [{"role": "user", "content": "hello"}])
        with pytest.raises(Forbidden) as caught:
            bound.post_messages(subject + "-other", [{"role": "user", "content": "hello"}])
    assert caught.value.code == "subject_forbidden"


def test_unknown_memory_is_not_found(client: MnemoClient) -> None:
    with pytest.raises(NotFound) as caught:
        client.get_memory(uuid.uuid4())
    assert (caught.value.status, caught.value.code) == (404, "memory_not_found")
    assert caught.value.message


def test_invalid_ids_are_bad_requests(client: MnemoClient) -> None:
    with pytest.raises(BadRequest) as caught:
        client.get_memory("not-a-uuid")
    assert (caught.value.status, caught.value.code) == (400, "invalid_id")
    # A subject id with a slash must not turn into another path.
    with pytest.raises(BadRequest) as caught:
        client.list_memories("a/b")
    assert caught.value.code == "invalid_id"


def test_semantically_invalid_input_is_unprocessable(client: MnemoClient, subject: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        client.create_memory(subject, "   ", "fact")
    assert isinstance(caught.value, ValidationError)
    assert (caught.value.status, caught.value.code) == (422, "invalid_content")
    with pytest.raises(Unprocessable) as caught:
        client.search(subject, "tea", k=1000)
    assert caught.value.code == "invalid_k"
    with pytest.raises(BadRequest) as bad:
        client.list_memories(subject, limit=0)
    assert bad.value.code == "invalid_limit"


def _response(status: int, body: bytes = b"", headers: dict = {}) -> httpx.Response:
    return httpx.Response(status, content=body, headers=headers, request=httpx.Request("GET", "http://x/"))


def test_mapping_of_statuses_without_a_server() -> None:
    limited = error_from_response(_response(429, b'{"error":{"code":"rate_limited","message":"slow down"}}', {"Retry-After": "3"}))
    assert isinstance(limited, RateLimited) and limited.retry_after == 3.0 and limited.code == "rate_limited"
    bare = error_from_response(_response(431))
    assert type(bare) is MnemoError and bare.status == 431 and bare.code is None
    assert isinstance(error_from_response(_response(503, b'{"error":{"code":"not_ready","message":"db"}}')), Unavailable)
    assert isinstance(error_from_response(_response(502, b"<html>bad gateway</html>")), ServerError)
    assert "404 memory_not_found: gone" == str(
        error_from_response(_response(404, b'{"error":{"code":"memory_not_found","message":"gone"}}'))
    )
