"""Each tool, called through the official SDK over stdio and over HTTP,
does what it says to a real server: its effects are checked through other
tools and through the REST API."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest

from conftest import Server, connect, error_of, eventually, structured, text_of

pytestmark = pytest.mark.anyio

TOOLS = {"remember", "recall", "get_context", "list_memories", "memory_history", "forget_memory", "export_subject"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def contents(results: List[Dict[str, Any]]) -> List[str]:
    """The text of each search result, memory or episode."""
    return [(r.get("memory") or r.get("episode") or {}).get("content", "") for r in results]


async def test_the_seven_tools_are_listed_with_what_they_are_for(server: Server, tenant: str, transport: str) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.description and len(tool.description) > 100, tool.name
        assert tool.input_schema["type"] == "object", tool.name
    by_name = {tool.name: tool for tool in listed}
    # The descriptions tell a model when to call what.
    assert "before answering" in by_name["get_context"].description
    assert "after each turn" in by_name["remember"].description
    assert "gdpr:export" in by_name["export_subject"].description
    assert set(by_name["recall"].input_schema["required"]) == {"subject", "query"}


async def test_remembered_messages_are_recalled_and_consolidated_into_memories(
    server: Server, tenant: str, subject: str, transport: str
) -> None:
    token = server.token(tenant)
    async with connect(server, token, transport) as client:
        messages = [
            {"role": "user", "content": "Hi! I moved to Lyon last spring.", "session": "s1"},
            {"role": "assistant", "content": "Welcome to Lyon!", "session": "s1", "id": "a-1"},
            {"role": "user", "content": "I love green tea, every morning.", "session": "s1"},
        ]
        recorded = structured(await client.call_tool("remember", {"subject": subject, "messages": messages}))
        assert (recorded["accepted"], recorded["duplicates"]) == (3, 0)
        ids = [event["id"] for event in recorded["events"]]
        assert ids[1] == "a-1", "a given id is kept"
        assert UUID.match(ids[0]) and UUID.match(ids[2]), f"the others get one: {ids}"

        # The ids make it safe to send again: nothing is recorded twice.
        again = [dict(message, id=id) for message, id in zip(messages, ids)]
        repeated = structured(await client.call_tool("remember", {"subject": subject, "messages": again}))
        assert (repeated["accepted"], repeated["duplicates"]) == (0, 3)

        async def tea_episode() -> Any:
            found = structured(await client.call_tool("recall", {"subject": subject, "query": "green tea", "include": ["episodes"]}))
            return [r for r in found["results"] if "green tea" in r["episode"]["content"]]

        hits = await eventually(tea_episode, what="the message as an episode")
        assert hits[0]["type"] == "episode"

        # Consolidation (asked for now through the API; it also runs on its
        # own) turns the conversation into memories recall finds.
        assert server.rest(token, "POST", f"/v1/subjects/{subject}/consolidate").status_code == 202

        async def tea_memory() -> Any:
            found = structured(await client.call_tool("recall", {"subject": subject, "query": "tea", "include": ["memories"]}))
            return [r for r in found["results"] if "tea" in r["memory"]["content"].lower()]

        memories = await eventually(tea_memory, what="a memory consolidated from the messages")
        memory = memories[0]["memory"]
        assert memory["provenance"]["source_event_ids"], "it names the messages it came from"


async def test_get_context_returns_the_block_for_the_next_answer(
    server: Server, tenant: str, subject: str, transport: str
) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        memory = {"content": "Prefers oolong tea without sugar", "kind": "preference", "tags": ["drinks"]}
        written = structured(await client.call_tool("remember", {"subject": subject, "memory": memory}))
        assert written["content"] == memory["content"]

        async def block() -> Any:
            result = await client.call_tool(
                "get_context",
                {"subject": subject, "messages": [{"role": "user", "content": "What tea should I make for her?"}], "token_budget": 200},
            )
            answer = structured(result)
            return result if "oolong" in answer["block"] else None

        result = await eventually(block, what="the memory in the context block")
        answer = structured(result)
        # What the model reads is the block itself; the structured answer
        # has the memories it used.
        assert text_of(result) == answer["block"]
        assert answer["block"].startswith("Relevant memories about the user")
        assert 0 < answer["tokens"] <= 200
        assert [m["memory"]["id"] for m in answer["memories"]] == [written["id"]]

        by_query = structured(await client.call_tool("get_context", {"subject": subject, "query": "oolong tea"}))
        assert "oolong" in by_query["block"]

        refused = error_of(await client.call_tool("get_context", {"subject": subject}))
        assert refused["error"]["code"] == "invalid_arguments"


async def test_list_memories_pages_through_the_subject(server: Server, tenant: str, subject: str, transport: str) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        written = []
        for content, kind in [("Lives in Lyon", "fact"), ("Likes jazz", "preference"), ("Chose the annual plan", "decision")]:
            memory = structured(await client.call_tool("remember", {"subject": subject, "memory": {"content": content, "kind": kind}}))
            written.append(memory["id"])

        async def all_three() -> Any:
            page = structured(await client.call_tool("list_memories", {"subject": subject}))
            return page if len(page["memories"]) == 3 else None

        full = await eventually(all_three, what="three memories listed")
        assert [m["id"] for m in full["memories"]] == written[::-1], "newest first"

        first = structured(await client.call_tool("list_memories", {"subject": subject, "limit": 2}))
        assert len(first["memories"]) == 2 and first["next_cursor"]
        second = structured(await client.call_tool("list_memories", {"subject": subject, "limit": 2, "cursor": first["next_cursor"]}))
        assert [m["id"] for m in first["memories"] + second["memories"]] == written[::-1]

        facts = structured(await client.call_tool("list_memories", {"subject": subject, "kinds": ["fact"]}))
        assert [m["content"] for m in facts["memories"]] == ["Lives in Lyon"]


async def test_history_shows_every_version_and_forget_deletes(server: Server, tenant: str, subject: str, transport: str) -> None:
    token = server.token(tenant)
    async with connect(server, token, transport) as client:
        memory = structured(
            await client.call_tool("remember", {"subject": subject, "memory": {"content": "Lives in Lyon", "kind": "fact"}})
        )
        revised = server.rest(
            token,
            "PATCH",
            f"/v1/memories/{memory['id']}",
            {"content": "Lives in Lyon, 7th arrondissement", "reason": "the user was more precise"},
            headers={"If-Match": '"1"'},
        )
        assert revised.status_code == 200, revised.text

        history = structured(await client.call_tool("memory_history", {"id": memory["id"]}))
        assert history["memory_id"] == memory["id"]
        versions = history["versions"]
        assert [v["event_type"] for v in versions] == ["MemoryCreated", "MemoryRevised"]
        assert [v["version"] for v in versions] == [1, 2]
        assert versions[1]["memory"]["content"] == "Lives in Lyon, 7th arrondissement"
        assert versions[1]["reason"] == "the user was more precise"

        async def listed() -> Any:
            page = structured(await client.call_tool("list_memories", {"subject": subject}))
            return [m for m in page["memories"] if m["id"] == memory["id"] and m["version"] == 2]

        await eventually(listed, what="the revised memory listed")

        forgotten = structured(await client.call_tool("forget_memory", {"id": memory["id"], "reason": "the user asked to forget it"}))
        assert forgotten["state"] == "deleted"

        history = structured(await client.call_tool("memory_history", {"id": memory["id"]}))
        versions = history["versions"]
        assert versions[-1]["event_type"] == "MemoryDeleted"
        assert versions[-1]["reason"] == "the user asked to forget it"

        async def gone() -> Any:
            page = structured(await client.call_tool("list_memories", {"subject": subject}))
            found = structured(await client.call_tool("recall", {"subject": subject, "query": "Lyon", "include": ["memories"]}))
            return page["memories"] == [] and found["results"] == []

        await eventually(gone, what="the forgotten memory out of lists and search")

        # Forgetting again changes nothing; an id that is no memory is the API's 404.
        again = structured(await client.call_tool("forget_memory", {"id": memory["id"]}))
        assert again["state"] == "deleted"
        missing = error_of(await client.call_tool("memory_history", {"id": "0190a5b6-1d1b-7c3e-9a61-3b4f1f0c2d11"}))
        assert (missing["error"]["code"], missing["status"]) == ("memory_not_found", 404)


async def test_export_holds_the_subjects_messages_and_memories(server: Server, tenant: str, subject: str, transport: str) -> None:
    async with connect(server, server.token(tenant), transport) as client:
        structured(
            await client.call_tool(
                "remember", {"subject": subject, "messages": [{"role": "user", "content": "My cat is called Miso", "session": "s1"}]}
            )
        )
        memory = structured(
            await client.call_tool("remember", {"subject": subject, "memory": {"content": "Has a cat called Miso", "kind": "fact"}})
        )
        export = structured(await client.call_tool("export_subject", {"subject": subject}))
    assert export["subject"] == subject
    assert [m["content"] for m in export["messages"]] == ["My cat is called Miso"]
    exported = [m for m in export["memories"] if m["memory"]["id"] == memory["id"]]
    assert exported and exported[0]["memory"]["content"] == "Has a cat called Miso"
    assert [v["event_type"] for v in exported[0]["history"]] == ["MemoryCreated"]
