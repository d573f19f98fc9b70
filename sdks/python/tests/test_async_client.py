"""Every operation through the asynchronous client, against a real server."""

from __future__ import annotations

import uuid

import pytest

from mnemo_client import AsyncMnemoClient, Forbidden, Gone, NotFound, Unauthorized, VersionConflict

from .conftest import Server, aeventually


async def test_operations(aclient: AsyncMnemoClient, subject: str) -> None:
    assert (await aclient.healthz()).status == "ok"
    assert (await aclient.readyz()).status == "ready"
    assert "http_requests" in await aclient.metrics()
    assert "components" in await aclient.openapi()

    posted = await aclient.post_messages(subject, [{"role": "user", "content": "I love green tea."}], session="s1")
    assert posted.accepted == 1
    accepted = await aclient.consolidate(subject)
    assert accepted.status == "requested"

    async def consolidated() -> list:
        return [m for m in (await aclient.list_memories(subject)).memories if m.provenance.producer.strategy != "api"]

    made = await aclient_wait(consolidated)
    assert posted.events[0].event_id in made[0].provenance.source_event_ids

    memory = await aclient.create_memory(subject, "Works nights as a nurse", "fact", tags=["work"])
    assert (await aclient.get_memory(memory.id)).content == "Works nights as a nurse"
    revised = await aclient.revise_memory(memory.id, tags=["work", "schedule"], expected_version=1)
    assert revised.tags == ["work", "schedule"]
    with pytest.raises(VersionConflict):
        await aclient.revise_memory(memory.id, tags=["x"], expected_version=1)
    history = await aclient.memory_history(memory.id)
    assert [v.version for v in history.versions] == [1, 2]

    async def found() -> list:
        results = (await aclient.search(subject, "nurse nights", include=["memories"])).results
        return results if memory.id in [r.memory.id for r in results if r.memory] else []

    results = await aclient_wait(found)
    assert results[0].memory is not None and results[0].memory.id == memory.id, "the best match ranks first"
    ctx = await aclient.context(subject, [{"role": "user", "content": "Does she work nights as a nurse?"}])
    assert "Works nights as a nurse" in ctx.block

    with pytest.raises(NotFound):
        await aclient.profile(subject)
    assert (await aclient.list_reviews(subject=subject)).reviews == []
    assert (await aclient.review_stats(subject=subject)).reviews.pending == 0
    with pytest.raises(NotFound) as caught:
        await aclient.resolve_review(uuid.uuid4(), "approve")
    assert caught.value.code == "review_not_found"

    types = [e.type for e in (await aclient.list_audit(subject=subject)).events]
    assert types[:2] == ["MessageReceived", "ConsolidationRequested"]
    assert "MemoryRevised" in types
    assert (await aclient.consolidation_report()).days == 30

    deleted = await aclient.delete_memory(memory.id)
    assert deleted.state == "deleted"
    export = await aclient.export_subject(subject)
    assert memory.id in [m.memory.id for m in export.memories]

    erasure = await aclient.erase_subject(subject)
    status = await aclient.get_erasure(erasure.erasure_id)
    assert status.erasure_id == erasure.erasure_id and status.status in ("pending", "completed")
    done = await aclient.wait_for_erasure(erasure.erasure_id)
    assert done.receipt is not None and done.receipt.subject == subject
    with pytest.raises(Gone):
        await aclient.get_memory(memory.id)


async def aclient_wait(probe):  # type: ignore[no-untyped-def]
    return await aeventually(probe, what=getattr(probe, "__name__", "the projection"))


async def test_async_errors(server: Server, tenant: str, subject: str) -> None:
    async with AsyncMnemoClient(server.url, "not-a-jwt") as anonymous:
        with pytest.raises(Unauthorized):
            await anonymous.list_memories(subject)
    async with server.async_client(tenant, subject=subject) as bound:
        with pytest.raises(Forbidden) as caught:
            await bound.search(subject + "-2", "tea")
        assert caught.value.code == "subject_forbidden"
