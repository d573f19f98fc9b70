"""The LangGraph store, through the calls LangGraph makes (``batch`` /
``abatch`` and the methods built on them) and inside a compiled graph."""

from __future__ import annotations

from typing import Iterator, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp  # noqa: E402

from mnemo_client import MnemoClient  # noqa: E402
from mnemo_client.adapters.langgraph import MnemoStore, decode_key, encode_key  # noqa: E402

from .conftest import Server, eventually, unique  # noqa: E402


@pytest.fixture
def store(client: MnemoClient) -> Iterator[MnemoStore]:
    yield MnemoStore(client, agent="lg-agent")


def test_key_encoding_is_reversible_and_tag_safe() -> None:
    for key in ["", "a", "Key With Spaces", "ünïcödé/ключ", "x" * 290, "1234567890123"]:
        tags = encode_key(key)
        assert decode_key(tags) == key
        assert all(len(tag) <= 64 and tag == tag.lower() and not any(c.isdigit() for c in tag[5:]) for tag in tags)
    with pytest.raises(ValueError):
        encode_key("x" * 1000)


def test_put_get_update_delete(store: MnemoStore, client: MnemoClient, subject: str) -> None:
    ns = (subject, "prefs")
    assert store.get(ns, "drink") is None

    store.put(ns, "drink", {"likes": "green tea", "sugar": False, "cups": 2})
    item = store.get(ns, "drink")
    assert item is not None
    assert (item.namespace, item.key) == (ns, "drink")
    assert item.value == {"likes": "green tea", "sugar": False, "cups": 2}

    # Stored as a memory of the subject "<subject>.prefs", tagged with the key.
    memory = client.get_memory(store._ids[(f"{subject}.prefs", "drink")])
    assert memory.subject == f"{subject}.prefs"
    assert memory.kind == "fact" and memory.agent == "lg-agent"
    assert decode_key(memory.tags) == "drink"

    store.put(ns, "drink", {"likes": "jasmine tea", "sugar": False, "cups": 3})
    item = store.get(ns, "drink")
    assert item is not None and item.value["likes"] == "jasmine tea"
    assert item.updated_at >= item.created_at
    versions = client.memory_history(memory.id).versions
    assert [v.event_type for v in versions] == ["MemoryCreated", "MemoryRevised"], "an update is a revision"

    store.delete(ns, "drink")
    assert store.get(ns, "drink") is None
    assert client.get_memory(memory.id).state == "deleted"
    store.delete(ns, "drink")  # deleting nothing is fine


def test_another_store_instance_finds_the_key(server: Server, tenant: str, subject: str) -> None:
    with server.client(tenant) as a, server.client(tenant) as b:
        MnemoStore(a).put((subject,), "K-1", {"v": 1})
        other = MnemoStore(b)
        # Without the writer's memory ids it goes through the subject's list,
        # which trails the write by the relay lag.
        item = eventually(lambda: other.get((subject,), "K-1"), what="the key through the list")
        assert item.value == {"v": 1}
        other.put((subject,), "K-1", {"v": 2})
        assert MnemoStore(a).get((subject,), "K-1") is not None
        assert a.get_memory(other._ids[(subject, "K-1")]).version == 2, "the same memory was revised, not a second one"


def test_search(store: MnemoStore, subject: str) -> None:
    ns = (subject,)
    store.put(ns, "tea", {"text": "likes green tea in the morning", "rating": 5})
    store.put(ns, "coffee", {"text": "drinks coffee after lunch", "rating": 2})
    store.put(ns, "job", {"text": "works as a structural engineer", "rating": 4})

    listed = eventually(lambda: (lambda r: r if len(r) == 3 else None)(store.search(ns)), what="3 items listed")
    assert [i.key for i in listed] == ["job", "coffee", "tea"], "newest first"
    assert all(i.score is None for i in listed)
    assert [i.key for i in store.search(ns, filter={"rating": {"$gte": 4}})] == ["job", "tea"]
    assert [i.key for i in store.search(ns, filter={"rating": 2})] == ["coffee"]
    assert [i.key for i in store.search(ns, limit=1, offset=1)] == ["coffee"]

    found = eventually(
        lambda: (lambda r: r if len(r) == 3 else None)(store.search(ns, query="green tea morning")),
        what="all three items in search",
    )
    assert found[0].key == "tea" and found[0].namespace == ns
    assert found[0].value == {"text": "likes green tea in the morning", "rating": 5}
    assert found[0].score is not None and found[0].score > 0
    assert all(i.key != "tea" for i in store.search(ns, query="green tea morning", filter={"rating": {"$lt": 5}}))


def test_memories_mnemo_made_are_items_keyed_by_id(store: MnemoStore, client: MnemoClient, subject: str) -> None:
    made = client.create_memory(subject, "Has two cats", "fact")
    item = store.get((subject,), made.id)
    assert item is not None and item.value == {"content": "Has two cats", "kind": "fact", "tags": []}
    listed = eventually(lambda: store.search((subject,)), what="the memory listed")
    assert [i.key for i in listed] == [made.id]


def test_list_namespaces(store: MnemoStore, subject: str) -> None:
    for ns in [(subject, "a", "x"), (subject, "a", "y"), (subject, "b", "x"), ("other" + subject, "x")]:
        store.put(ns, "k", {"v": ns[-1]})
    store.put((subject, "gone"), "k", {"v": 0})
    store.delete((subject, "gone"), "k")

    # A namespace whose items were all deleted is not listed.
    everything = sorted([(subject, "a", "x"), (subject, "a", "y"), (subject, "b", "x"), ("other" + subject, "x")])
    eventually(lambda: store.list_namespaces() == everything, what="the 4 live namespaces")
    assert store.list_namespaces(prefix=(subject, "a")) == [(subject, "a", "x"), (subject, "a", "y")]
    assert store.list_namespaces(suffix=("x",)) == sorted(
        [(subject, "a", "x"), (subject, "b", "x"), ("other" + subject, "x")]
    )
    assert store.list_namespaces(prefix=(subject, "*", "x")) == [(subject, "a", "x"), (subject, "b", "x")]
    assert store.list_namespaces(prefix=(subject,), max_depth=2) == [(subject, "a"), (subject, "b")]
    assert store.list_namespaces(limit=2, offset=1) == everything[1:3]


def test_namespaces_that_cannot_be_subjects_are_refused(store: MnemoStore) -> None:
    for bad in [("has space",), ("slash/label",), ("-leading",), ("x" * 200,)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("dotted.label",), "k", {"v": 1})


def test_custom_namespace_mapping(client: MnemoClient, subject: str) -> None:
    store = MnemoStore(
        client,
        kind="preference",
        namespace_to_subject=lambda ns: ns[-1],
        subject_to_namespace=lambda s: ("memories", s),
    )
    store.put(("memories", subject), "style", {"tone": "formal"})
    memory = client.get_memory(store._ids[(subject, "style")])
    assert memory.subject == subject and memory.kind == "preference"


def test_batch_runs_ops_in_order(store: MnemoStore, subject: str) -> None:
    ns = (subject,)
    results = store.batch(
        [PutOp(ns, "a", {"n": 1}), GetOp(ns, "a"), PutOp(ns, "a", None), GetOp(ns, "a"), GetOp(ns, "b")]
    )
    assert results[0] is None and results[2] is None
    assert results[1] is not None and results[1].value == {"n": 1}  # type: ignore[union-attr]
    assert results[3] is None and results[4] is None


async def test_async_api(store: MnemoStore, subject: str) -> None:
    ns = (subject, "async")
    await store.aput(ns, "k1", {"text": "speaks French and Italian"})
    item = await store.aget(ns, "k1")
    assert item is not None and item.value == {"text": "speaks French and Italian"}
    results = await store.abatch([GetOp(ns, "k1"), SearchOp(ns, None, 10, 0, None), ListNamespacesOp()])
    assert results[0] is not None
    await store.adelete(ns, "k1")
    assert await store.aget(ns, "k1") is None


class State(TypedDict):
    user_id: str
    message: str
    recalled: str


def test_inside_a_langgraph_graph(store: MnemoStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    def remember(state: State) -> dict:
        get_store().put(("users", state["user_id"]), "last_message", {"text": state["message"]})
        return {}

    def recall(state: State) -> dict:
        item = get_store().get(("users", state["user_id"]), "last_message")
        return {"recalled": item.value["text"] if item else ""}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)

    user = unique("u")
    out = app.invoke({"user_id": user, "message": "I moved to Lyon", "recalled": ""})
    assert out["recalled"] == "I moved to Lyon"
    assert store.client.get_memory(store._ids[(f"users.{user}", "last_message")]).subject == f"users.{user}"
