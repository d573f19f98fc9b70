"""The LangChain retriever."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402

from mnemo_client import MnemoClient, models  # noqa: E402
from mnemo_client.adapters.langchain import MnemoRetriever  # noqa: E402

from .conftest import Server, eventually  # noqa: E402


def test_retriever_returns_documents_with_type_score_and_provenance(client: MnemoClient, subject: str) -> None:
    posted = client.post_messages(
        subject,
        [
            {"role": "user", "content": "I take my tea with oat milk", "id": "m-1"},
            {"role": "user", "content": "Oat milk in my tea every morning, no sugar", "id": "m-2"},
        ],
    )
    memory = client.create_memory(subject, "Takes tea with oat milk", "preference", tags=["drinks"], sources=["m-1"])

    retriever = MnemoRetriever(client=client, subject=subject, k=5)
    docs = eventually(
        lambda: (lambda d: d if {x.metadata["type"] for x in d} == {"memory", "episode"} else None)(
            retriever.invoke("tea with oat milk")
        ),
        what="the memory and an episode in search",
    )
    assert all(isinstance(doc, Document) for doc in docs)
    scores = [doc.metadata["score"] for doc in docs]
    assert scores == sorted(scores, reverse=True)

    mem_doc = next(doc for doc in docs if doc.metadata["type"] == "memory")
    assert mem_doc.page_content == "Takes tea with oat milk"
    assert mem_doc.id == memory.id == mem_doc.metadata["id"]
    assert mem_doc.metadata["kind"] == "preference"
    assert mem_doc.metadata["tags"] == ["drinks"]
    assert mem_doc.metadata["provenance"]["source_event_ids"] == [posted.events[0].event_id]
    assert mem_doc.metadata["provenance"]["producer"]["strategy"] == "api"
    assert set(mem_doc.metadata["components"]) >= {"relevance", "recency", "importance"}

    # The message the memory was made from is not returned beside it.
    episodes = [doc for doc in docs if doc.metadata["type"] == "episode"]
    assert [doc.metadata["message_id"] for doc in episodes] == ["m-2"]
    episode = episodes[0]
    assert episode.page_content == "Oat milk in my tea every morning, no sugar"
    assert episode.metadata["role"] == "user"
    assert episode.metadata["provenance"]["source_event_ids"] == [posted.events[1].event_id]


async def test_retriever_async_and_options(server: Server, tenant: str, subject: str) -> None:
    with server.client(tenant) as client:
        client.create_memory(subject, "Lives in Lyon", "fact")
        client.create_memory(subject, "Prefers to be called Sam", "preference")
        every = MnemoRetriever(client=client, subject=subject, k=10, include=["memories"])
        eventually(lambda: len(every.invoke("Lyon Sam")) == 2, what="both memories in search")
        only_memories = MnemoRetriever(client=client, subject=subject, k=1, include=["memories"])
        assert [d.page_content for d in only_memories.invoke("Lyon")] == ["Lives in Lyon"]

        async with server.async_client(tenant) as aclient:
            native = MnemoRetriever(client=client, async_client=aclient, subject=subject, include=["memories"],
                                    filters=models.SearchFilters(kinds=["preference"]))
            docs = await native.ainvoke("called Sam in Lyon")
            assert [d.page_content for d in docs] == ["Prefers to be called Sam"]

        threaded = MnemoRetriever(client=client, subject=subject, k=1, include=["memories"])
        assert [d.page_content for d in await threaded.ainvoke("Lyon")] == ["Lives in Lyon"]
