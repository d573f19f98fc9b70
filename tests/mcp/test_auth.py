"""The token decides, exactly as on the REST API: scopes, subject binding
and tenant are the API's, and what it refuses is a tool error with its
code, never a protocol failure. Over HTTP, no token is no MCP at all."""

from __future__ import annotations

from typing import Iterator

import httpx2
import pytest
from mcp import MCPError

from conftest import Server, connect, error_of, eventually, structured

pytestmark = pytest.mark.anyio

MESSAGE = {"role": "user", "content": "I prefer window seats", "session": "s1"}


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The errors inside (nested) exception groups, which the SDK's task
    groups wrap a connection's failure in."""
    inner = getattr(error, "exceptions", None)
    if inner is None:
        yield error
        return
    for each in inner:
        yield from leaves(each)


async def test_a_read_only_token_cannot_remember(server: Server, tenant: str, subject: str, transport: str) -> None:
    reader = server.token(tenant, scopes=["memories:read"])
    async with connect(server, reader, transport) as client:
        refused = error_of(await client.call_tool("remember", {"subject": subject, "messages": [MESSAGE]}))
        assert refused["status"] == 403
        assert refused["error"]["code"] == "insufficient_scope"
        assert "memories:write" in refused["error"]["message"]
        refused = error_of(
            await client.call_tool("remember", {"subject": subject, "memory": {"content": "Prefers window seats", "kind": "preference"}})
        )
        assert refused["error"]["code"] == "insufficient_scope"
        # Reading is what it may do.
        assert structured(await client.call_tool("list_memories", {"subject": subject}))["memories"] == []
    audit = server.rest(server.token(tenant), "GET", f"/v1/audit?subject={subject}").json()
    assert audit["events"] == [], "nothing was recorded"


async def test_a_subject_bound_token_reaches_its_subject_only(server: Server, tenant: str, subject: str, transport: str) -> None:
    bound = server.token(tenant, scopes=["memories:read", "memories:write"], subject=subject)
    async with connect(server, bound, transport) as client:
        assert structured(await client.call_tool("remember", {"subject": subject, "messages": [MESSAGE]}))["accepted"] == 1
        for tool, arguments in [
            ("remember", {"subject": "someone-else", "messages": [MESSAGE]}),
            ("recall", {"subject": "someone-else", "query": "seats"}),
            ("get_context", {"subject": "someone-else", "query": "seats"}),
            ("list_memories", {"subject": "someone-else"}),
        ]:
            refused = error_of(await client.call_tool(tool, arguments))
            assert (refused["status"], refused["error"]["code"]) == (403, "subject_forbidden"), tool


async def test_export_needs_the_gdpr_export_scope(server: Server, tenant: str, subject: str, transport: str) -> None:
    agent = server.token(tenant, scopes=["memories:read", "memories:write"])
    async with connect(server, agent, transport) as client:
        structured(await client.call_tool("remember", {"subject": subject, "messages": [MESSAGE]}))
        refused = error_of(await client.call_tool("export_subject", {"subject": subject}))
        assert (refused["status"], refused["error"]["code"]) == (403, "insufficient_scope")
        assert "gdpr:export" in refused["error"]["message"]
    admin = server.token(tenant, scopes=["gdpr:export"])
    async with connect(server, admin, transport) as client:
        export = structured(await client.call_tool("export_subject", {"subject": subject}))
    assert [m["content"] for m in export["messages"]] == [MESSAGE["content"]]


async def test_another_tenant_sees_nothing(server: Server, tenant: str, subject: str, transport: str) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        memory = structured(
            await client.call_tool("remember", {"subject": subject, "memory": {"content": "Prefers window seats", "kind": "preference"}})
        )

        async def listed() -> bool:
            page = structured(await client.call_tool("list_memories", {"subject": subject}))
            return len(page["memories"]) == 1

        await eventually(listed, what="the memory listed in its tenant")
    async with connect(server, server.token(f"{tenant}-other"), transport) as client:
        assert structured(await client.call_tool("list_memories", {"subject": subject}))["memories"] == []
        assert structured(await client.call_tool("recall", {"subject": subject, "query": "window seats"}))["results"] == []
        missing = error_of(await client.call_tool("memory_history", {"id": memory["id"]}))
        assert (missing["status"], missing["error"]["code"]) == (404, "memory_not_found")


async def test_arguments_the_schema_refuses_are_tool_errors_and_unknown_tools_protocol_errors(
    server: Server, tenant: str, transport: str
) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        bad_id = error_of(await client.call_tool("export_subject", {"subject": "../v1/audit"}))
        assert bad_id["error"]["code"] == "invalid_id"
        unknown_field = await client.call_tool("recall", {"subject": "u", "q": "tea"})
        assert unknown_field.is_error
        with pytest.raises(Exception) as raised:
            await client.call_tool("no_such_tool", {})
        assert any(isinstance(error, MCPError) for error in leaves(raised.value)), raised.value


def test_http_without_a_valid_token_is_401_before_any_mcp(server: Server, tenant: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for authorization in [None, "Bearer not-a-token", f"Basic {server.token(tenant)}"]:
        sent = dict(headers, **({"Authorization": authorization} if authorization else {}))
        response = httpx2.post(f"{server.url}/mcp", json=initialize, headers=sent, timeout=10)
        assert response.status_code == 401, authorization
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["error"]["code"] in {"missing_token", "malformed_token"}, response.text
    accepted = httpx2.post(
        f"{server.url}/mcp", json=initialize, headers=dict(headers, Authorization=f"Bearer {server.token(tenant)}"), timeout=10
    )
    assert accepted.status_code == 200
    assert accepted.json()["result"]["serverInfo"]["name"] == "mnemo"

    stream = httpx2.get(f"{server.url}/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
    assert stream.status_code == 405
    assert stream.json()["error"]["code"] == "stream_not_offered"


async def test_the_sdk_cannot_connect_over_http_without_a_valid_token(server: Server) -> None:
    with pytest.raises(Exception) as raised:
        async with connect(server, "not-a-token", "http") as client:
            await client.list_tools()
    assert any(isinstance(error, MCPError) for error in leaves(raised.value)), raised.value
