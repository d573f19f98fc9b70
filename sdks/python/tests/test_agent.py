"""The agent-turn helper against the real server and a mock model."""

from __future__ import annotations

from typing import Any, Dict, List

from mnemo_client import MnemoClient
from mnemo_client.agent import agent_turn, async_agent_turn, inject_memory

from .conftest import Server, eventually
from .mock_llm import MockLLM


def _wait_searchable(client: MnemoClient, subject: str, query: str) -> None:
    eventually(lambda: client.search(subject, query, include=["memories"]).results, what="the memory in search")


def test_turn_injects_memory_calls_the_model_and_records_the_turn(client: MnemoClient, subject: str) -> None:
    client.create_memory(subject, "Prefers green tea over coffee", "preference")
    _wait_searchable(client, subject, "green tea")

    conversation: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a friendly barista."},
        {"role": "user", "content": "Hi! What should I drink this morning, green tea or coffee?"},
    ]
    with MockLLM(reply="Green tea, as you prefer.") as llm:
        result = agent_turn(
            client,
            subject,
            conversation,
            llm_base_url=llm.base_url,
            model="mock-model",
            api_key="sk-test",
            session="sess-1",
            agent="barista",
            context_options={"token_budget": 300},
            completion_options={"temperature": 0},
        )

    assert len(llm.requests) == 1
    sent = llm.requests[0]
    assert sent["model"] == "mock-model" and sent["temperature"] == 0
    assert llm.headers[0]["Authorization"] == "Bearer sk-test"
    roles = [msg["role"] for msg in sent["messages"]]
    assert roles == ["system", "system", "user"], "the block goes after the app's system prompt"
    assert sent["messages"][0]["content"] == "You are a friendly barista."
    injected = sent["messages"][1]["content"]
    assert result.context is not None and injected == result.context.block
    assert "Relevant memories about the user" in injected
    assert "Prefers green tea over coffee" in injected
    assert sent["messages"][2] == conversation[1]
    assert len(conversation) == 2, "the caller's conversation is left alone"

    assert result.reply == "Green tea, as you prefer."
    assert result.posted is not None and result.posted.accepted == 2
    stored = client.export_subject(subject).messages
    assert [(msg.role, msg.content, msg.session, msg.agent) for msg in stored] == [
        ("user", "Hi! What should I drink this morning, green tea or coffee?", "sess-1", "barista"),
        ("assistant", "Green tea, as you prefer.", "sess-1", "barista"),
    ]


def test_turn_without_memories_sends_the_conversation_unchanged(client: MnemoClient, subject: str) -> None:
    conversation = [{"role": "user", "content": "Hello there"}]
    with MockLLM(reply="Hi!") as llm:
        result = agent_turn(client, subject, conversation, llm_base_url=llm.base_url, model="m")
    assert result.context is not None and result.context.block == ""
    assert llm.requests[0]["messages"] == conversation
    assert [msg.content for msg in client.export_subject(subject).messages] == ["Hello there", "Hi!"]


async def test_async_turn(server: Server, tenant: str, subject: str) -> None:
    with server.client(tenant) as sync:
        sync.create_memory(subject, "Allergic to peanuts", "fact")
        _wait_searchable(sync, subject, "peanuts")
    async with server.async_client(tenant) as client:
        with MockLLM(reply="No peanut sauce then.") as llm:
            result = await async_agent_turn(
                client,
                subject,
                [{"role": "user", "content": "Can I have the satay with peanuts?"}],
                llm_base_url=llm.base_url,
                model="m",
            )
        assert "Allergic to peanuts" in llm.requests[0]["messages"][0]["content"]
        assert llm.requests[0]["messages"][0]["role"] == "system"
        assert result.reply == "No peanut sauce then."
        export = await client.export_subject(subject)
    assert [msg.role for msg in export.messages] == ["user", "assistant"]


def test_inject_memory_placement() -> None:
    assert inject_memory([{"role": "user", "content": "x"}], "") == [{"role": "user", "content": "x"}]
    out = inject_memory(
        [{"role": "system", "content": "a"}, {"role": "developer", "content": "b"}, {"role": "user", "content": "c"}],
        "MEM",
    )
    assert [msg["content"] for msg in out] == ["a", "b", "MEM", "c"]
