"""A LangGraph ``BaseStore`` backed by mnemo (``pip install mnemo-client[langgraph]``).

Mapping
-------
* **Namespace → subject.** A namespace is one mnemo subject: its labels joined
  by ``.`` (``("users", "42")`` is subject ``users.42``). LangGraph forbids
  ``.`` inside labels, so the mapping is reversible. Labels may use letters,
  digits and ``_ : -`` and the whole id at most 128 characters (mnemo's subject
  id rules); anything else raises ``InvalidNamespaceError``. Pass
  ``namespace_to_subject`` / ``subject_to_namespace`` to map differently, e.g.
  ``("memories", user_id)`` to just ``user_id``.
* **Item → memory.** ``put(ns, key, value)`` writes a memory of kind
  ``kind`` (default ``fact``) whose content is ``value`` as JSON, tagged with
  the key (encoded into tags ``lgk0:…``, ``lgk1:…`` of the letters a-p, since
  tags are lower-cased and screened for personal data). A second ``put`` of
  the key revises the same memory, so its history keeps every value;
  ``delete`` marks it deleted. Memories mnemo made itself (consolidated from
  conversations) appear too, with their id as key and
  ``{"content", "kind", "tags"}`` as value.
* **search** with a ``query`` is mnemo's hybrid search within the subject
  (``score`` is mnemo's); without one it lists the subject's memories, newest
  first. ``filter`` is applied to the values client-side (``$eq``, ``$ne``,
  ``$gt``, ``$gte``, ``$lt``, ``$lte``), after retrieval.
* **list_namespaces** reads the tenant's audit log for the subjects that
  have memories (the token needs ``audit:read``), so it costs a scan of the
  log.

Limits, as far as the API allows: values pass mnemo's PII scrubbing like any
content (an e-mail address in a value is stored scrubbed); TTLs are not
supported; ``search`` needs the full namespace (one subject), not a prefix;
lists and search trail writes by the relay lag, while a ``get`` of a key this
store instance wrote reads the memory directly and is read-your-writes.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .. import models as m
from ..client import MnemoClient
from ..errors import NotFound

_LABEL = re.compile(r"^[A-Za-z0-9_:-]+$")
_SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_KEY_TAG = re.compile(r"^lgk(\d):([a-p]*)$")
_LETTERS = "abcdefghijklmnop"
_CHUNK_BYTES = 29  # "lgkN:" + 2 letters per byte stays within a tag's 64 characters
_MAX_CHUNKS = 10
_LIVE_STATES = "active,archived"


def default_namespace_to_subject(namespace: Tuple[str, ...]) -> str:
    if not namespace:
        raise InvalidNamespaceError("A namespace maps to a subject: it cannot be empty.")
    for label in namespace:
        if not _LABEL.match(label):
            raise InvalidNamespaceError(
                f"Namespace label {label!r} of {namespace} cannot be part of a mnemo subject id "
                "(letters, digits and _ : - only)."
            )
    subject = ".".join(namespace)
    if not _SUBJECT.match(subject):
        raise InvalidNamespaceError(
            f"Namespace {namespace} maps to {subject!r}, not a valid mnemo subject id "
            "(must start with a letter or digit, at most 128 characters)."
        )
    return subject


def default_subject_to_namespace(subject: str) -> Tuple[str, ...]:
    return tuple(subject.split("."))


def encode_key(key: str) -> List[str]:
    """The tags that carry ``key``: reversible, lower-case letters only (tags
    are lower-cased, and letters a-p can never look like personal data)."""
    data = key.encode("utf-8")
    chunks = [data[i : i + _CHUNK_BYTES] for i in range(0, len(data), _CHUNK_BYTES)] or [b""]
    if len(chunks) > _MAX_CHUNKS:
        raise ValueError(f"key too long for mnemo tags: at most {_CHUNK_BYTES * _MAX_CHUNKS} UTF-8 bytes")
    return [f"lgk{i}:" + "".join(_LETTERS[b >> 4] + _LETTERS[b & 15] for b in chunk) for i, chunk in enumerate(chunks)]


def decode_key(tags: Sequence[str]) -> Optional[str]:
    parts: Dict[int, str] = {}
    for tag in tags:
        match = _KEY_TAG.match(tag)
        if match:
            parts[int(match.group(1))] = match.group(2)
    if not parts or sorted(parts) != list(range(len(parts))):
        return None
    letters = "".join(parts[i] for i in range(len(parts)))
    data = bytes(_LETTERS.index(letters[i]) << 4 | _LETTERS.index(letters[i + 1]) for i in range(0, len(letters), 2))
    return data.decode("utf-8", errors="replace")


def _path(value: Mapping[str, Any], dotted: str) -> Any:
    current: Any = value
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING
        current = current[part]
    return current


_MISSING = object()
_OPS: Dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches_filter(value: Mapping[str, Any], conditions: Optional[Mapping[str, Any]]) -> bool:
    for field, wanted in (conditions or {}).items():
        actual = _path(value, field)
        if isinstance(wanted, Mapping) and wanted and all(k in _OPS for k in wanted):
            for op, operand in wanted.items():
                if actual is _MISSING:
                    if op != "$ne":
                        return False
                    continue
                try:
                    if not _OPS[op](actual, operand):
                        return False
                except TypeError:
                    return False
        elif actual is _MISSING or actual != wanted:
            return False
    return True


def _matches_condition(namespace: Tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    window = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, window))


class MnemoStore(BaseStore):
    """LangGraph long-term memory store on a mnemo server; see the module doc
    for how namespaces and items map to subjects and memories."""

    supports_ttl = False

    def __init__(
        self,
        client: MnemoClient,
        *,
        kind: m.MemoryKind = "fact",
        agent: Optional[str] = None,
        namespace_to_subject: Callable[[Tuple[str, ...]], str] = default_namespace_to_subject,
        subject_to_namespace: Callable[[str], Tuple[str, ...]] = default_subject_to_namespace,
    ) -> None:
        self.client = client
        self.kind = kind
        self.agent = agent
        self.namespace_to_subject = namespace_to_subject
        self.subject_to_namespace = subject_to_namespace
        # Memory ids of the keys this instance wrote: read back by id, which
        # is read-your-writes, where lists trail the log.
        self._ids: Dict[Tuple[str, str], str] = {}
        self._lock = threading.Lock()

    # --- BaseStore ------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> List[Result]:
        results: List[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation {op!r}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        # The sync client is thread-safe; a worker thread keeps the event
        # loop free while the requests run.
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    # --- operations -----------------------------------------------------

    def _get(self, op: GetOp) -> Optional[Item]:
        subject = self.namespace_to_subject(tuple(op.namespace))
        memory = self._find(subject, op.key)
        return None if memory is None else self._item(memory, tuple(op.namespace), op.key)

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        subject = self.namespace_to_subject(namespace)
        existing = self._find(subject, op.key)
        if op.value is None:
            if existing is not None:
                self.client.delete_memory(existing.id)
            with self._lock:
                self._ids.pop((subject, op.key), None)
            return
        content = json.dumps(dict(op.value), ensure_ascii=False, default=str)
        if existing is None:
            memory = self.client.create_memory(subject, content, self.kind, tags=encode_key(op.key), agent=self.agent)
            with self._lock:
                self._ids[(subject, op.key)] = memory.id
        elif existing.content != content:
            self.client.revise_memory(existing.id, content=content, expected_version=existing.version)

    def _search(self, op: SearchOp) -> List[SearchItem]:
        namespace = tuple(op.namespace_prefix)
        subject = self.namespace_to_subject(namespace)
        wanted = op.offset + op.limit
        found: List[SearchItem] = []
        if op.query:
            # Filtering happens after retrieval, so ask for the most mnemo gives.
            k = 100 if op.filter else min(100, max(1, wanted))
            results = self.client.search(subject, op.query, k=k, include=["memories"]).results
            for result in results:
                if result.memory is None:
                    continue
                item = self._search_item(result.memory, namespace, result.score)
                if matches_filter(item.value, op.filter):
                    found.append(item)
                if len(found) >= wanted:
                    break
        else:
            for memory in self.client.iter_memories(subject, state=_LIVE_STATES, page_size=100):
                item = self._search_item(memory, namespace, None)
                if matches_filter(item.value, op.filter):
                    found.append(item)
                if len(found) >= wanted:
                    break
        return found[op.offset : wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> List[Tuple[str, ...]]:
        subjects: List[str] = []
        for event in self.client.iter_audit(type="MemoryCreated", page_size=500):
            if event.subject and event.subject not in subjects:
                subjects.append(event.subject)
        namespaces = set()
        for subject in subjects:
            namespace = tuple(self.subject_to_namespace(subject))
            if op.match_conditions and not all(_matches_condition(namespace, c) for c in op.match_conditions):
                continue
            # Only subjects that still hold something: not deleted, not erased.
            if not self.client.list_memories(subject, state=_LIVE_STATES, limit=1).memories:
                continue
            namespaces.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # --- helpers --------------------------------------------------------

    def _find(self, subject: str, key: str) -> Optional[m.Memory]:
        """The live memory that holds ``key`` in ``subject``, if any."""
        with self._lock:
            known = self._ids.get((subject, key))
        if known is not None:
            memory = self.client.get_memory(known)
            if memory.state in ("active", "archived"):
                return memory
            with self._lock:
                self._ids.pop((subject, key), None)
            return None
        candidates = self.client.list_memories(subject, tag=encode_key(key), state=_LIVE_STATES, limit=50)
        for memory in candidates.memories:  # newest first
            if decode_key(memory.tags) == key:
                # The list may trail the log: read the memory itself.
                current = self.client.get_memory(memory.id)
                if current.state in ("active", "archived"):
                    with self._lock:
                        self._ids[(subject, key)] = current.id
                    return current
        if _is_uuid(key):
            # A memory mnemo made itself, addressed by its id.
            try:
                memory = self.client.get_memory(key)
            except NotFound:
                return None
            if memory.subject == subject and memory.state in ("active", "archived") and decode_key(memory.tags) is None:
                return memory
        return None

    def _item(self, memory: m.Memory, namespace: Tuple[str, ...], key: Optional[str]) -> Item:
        return Item(**self._fields(memory, namespace, key))

    def _search_item(self, memory: m.Memory, namespace: Tuple[str, ...], score: Optional[float]) -> SearchItem:
        return SearchItem(score=score, **self._fields(memory, namespace, None))

    def _fields(self, memory: m.Memory, namespace: Tuple[str, ...], key: Optional[str]) -> Dict[str, Any]:
        stored_key = decode_key(memory.tags)
        value: Dict[str, Any]
        if stored_key is not None:
            try:
                parsed = json.loads(memory.content or "null")
            except ValueError:
                parsed = None
            value = parsed if isinstance(parsed, dict) else {"content": memory.content}
        else:
            value = {"content": memory.content, "kind": memory.kind, "tags": list(memory.tags)}
        return dict(
            namespace=namespace,
            key=key if key is not None else (stored_key if stored_key is not None else memory.id),
            value=value,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
        )


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


__all__ = ["MnemoStore", "encode_key", "decode_key", "default_namespace_to_subject", "default_subject_to_namespace"]
