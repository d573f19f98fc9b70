"""As-of reads, a subject's changes and the subject list, through both
clients, against a real server."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone

import pytest

from mnemo_client import AsyncMnemoClient, BadRequest, MnemoClient, NotFound, models

from .conftest import Server, aeventually, eventually


def instant() -> datetime:
    """An instant after everything recorded so far and before anything recorded next."""
    time.sleep(0.005)
    at = datetime.now(timezone.utc)
    time.sleep(0.005)
    return at


def test_get_memory_as_of(client: MnemoClient, subject: str) -> None:
    before = instant()
    created = client.create_memory(subject, "Drinks coffee", kind="preference")
    then = instant()
    client.revise_memory(created.id, content="Drinks tea", reason="she switched")

    past = client.get_memory(created.id, as_of=then)
    assert isinstance(past, models.MemoryAsOf)
    assert (past.content, past.version, past.as_of.event.type) == ("Drinks coffee", 1, "MemoryCreated")
    assert past.as_of.at == then
    assert client.get_memory(created.id).content == "Drinks tea"
    with pytest.raises(NotFound) as missing:
        client.get_memory(created.id, as_of=before)
    assert missing.value.code == "memory_not_found"
    with pytest.raises(BadRequest) as bad:
        client.get_memory(created.id, as_of="yesterday")
    assert bad.value.code == "invalid_as_of"


def test_list_memories_and_profile_as_of(client: MnemoClient, subject: str) -> None:
    created = client.create_memory(subject, "Plays chess", kind="fact")
    then = instant()
    client.delete_memory(created.id)

    page = client.list_memories(subject, as_of=then)
    assert isinstance(page, models.MemoryAsOfPage)
    assert [(m.id, m.state, m.as_of.event.type) for m in page.memories] == [(created.id, "active", "MemoryCreated")]
    now = client.list_memories(subject, state="deleted", as_of=datetime.now(timezone.utc).isoformat())
    assert [m.as_of.event.type for m in now.memories] == ["MemoryDeleted"]
    with pytest.raises(NotFound) as missing:
        client.get_profile(subject, as_of=then)
    assert missing.value.code == "profile_not_found"
    with pytest.raises(BadRequest) as bad:
        client.profile(subject, as_of="not a time")
    assert bad.value.code == "invalid_as_of"


def test_subject_changes(client: MnemoClient, subject: str) -> None:
    start = instant()
    created = client.create_memory(subject, "Lives in Lyon", kind="fact")
    client.revise_memory(created.id, content="Lives in Paris", reason="she moved")

    changes = client.subject_changes(subject, from_=start)
    assert changes.next_cursor is None
    assert [(c.memory_id, c.change, c.reason, c.before and c.before.content, c.after and c.after.content) for c in changes.items] == [
        (created.id, "created", None, None, "Lives in Lyon"),
        (created.id, "revised", "she moved", "Lives in Lyon", "Lives in Paris"),
    ]
    assert changes.items[0].producer is not None and changes.items[0].producer.strategy == "api"
    first = client.subject_changes(subject, from_=start, to=datetime.now(timezone.utc), limit=1)
    assert len(first.items) == 1 and first.next_cursor is not None
    rest = client.subject_changes(subject, from_=start, limit=1, cursor=first.next_cursor)
    assert [c.change for c in rest.items] == ["revised"]


def test_list_subjects(server: Server, client: MnemoClient, tenant: str, subject: str) -> None:
    client.create_memory(subject, "Has a cat", kind="fact")
    gone = client.create_memory(subject, "Had a dog", kind="fact")
    client.delete_memory(gone.id)

    def listed() -> models.SubjectPage | None:
        page = client.list_subjects(prefix=subject)
        return page if page.items and page.items[0].memories.deleted == 1 else None

    page = eventually(listed, what="the subject listed")
    assert [s.subject for s in page.items] == [subject]
    assert page.items[0].memories.active == 1 and page.items[0].last_activity is not None
    with server.client(tenant, scopes=["memories:read"], subject=subject) as bound:
        assert [s.subject for s in bound.list_subjects().items] == [subject]


async def test_async_as_of_changes_and_subjects(aclient: AsyncMnemoClient, subject: str) -> None:
    await asyncio.sleep(0.005)
    start = datetime.now(timezone.utc)
    await asyncio.sleep(0.005)
    created = await aclient.create_memory(subject, "Likes jazz", kind="preference")
    await asyncio.sleep(0.005)
    then = datetime.now(timezone.utc)
    await asyncio.sleep(0.005)
    await aclient.revise_memory(created.id, content="Likes blues")

    past = await aclient.get_memory(created.id, as_of=then)
    assert isinstance(past, models.MemoryAsOf) and past.content == "Likes jazz"
    page = await aclient.list_memories(subject, as_of=then)
    assert [m.content for m in page.memories] == ["Likes jazz"]
    with pytest.raises(NotFound):
        await aclient.get_profile(subject, as_of=then)
    changes = await aclient.subject_changes(subject, from_=start)
    assert [c.change for c in changes.items] == ["created", "revised"]

    async def listed() -> models.SubjectPage | None:
        page = await aclient.list_subjects(prefix=subject)
        return page if page.items else None

    subjects = await aeventually(listed, what="the subject listed")
    assert subjects.items[0].memories.active == 1
