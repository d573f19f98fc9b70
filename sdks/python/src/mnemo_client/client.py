"""The synchronous client."""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from types import TracebackType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Type, TypeVar, Union

import httpx

from . import _ops as ops
from . import models as m
from ._base import ClientBase
from ._ops import Call, ContextMessageLike, CsvLike, FiltersLike, MessageLike
from ._retry import RetryPolicy
from .errors import TransportError, error_from_response

T = TypeVar("T")
Id = Union[str, uuid.UUID]


class MnemoClient(ClientBase):
    """A client of one mnemo server, for one token.

    ``base_url`` defaults to ``$MNEMO_URL`` (else ``http://127.0.0.1:8080``),
    ``token`` to ``$MNEMO_TOKEN``. Pass ``http_client`` to reuse an
    ``httpx.Client`` (its base URL is then ignored). Use as a context manager,
    or call :meth:`close`.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry: Optional[RetryPolicy] = None,
        headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(base_url, token, timeout=timeout, max_retries=max_retries, retry=retry, headers=headers)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)

    # --- plumbing -------------------------------------------------------

    def _call(self, call: Call[T]) -> T:
        request_id = self._new_request_id()
        kwargs = self._request_kwargs(call, request_id)
        url = self.base_url + call.path
        retry = 0
        while True:
            try:
                response = self._http.request(call.method, url, **kwargs)
            except httpx.TransportError as exc:
                if retry < self.retry.max_retries and self.retry.should_retry_exception(exc, call.idempotent):
                    time.sleep(self.retry.delay(retry))
                    retry += 1
                    continue
                raise TransportError(f"{call.method} {call.path}: {exc!r}", request_id=request_id) from exc
            if response.is_success:
                return call.parse(response)
            if retry < self.retry.max_retries and self.retry.should_retry_response(response, call.idempotent):
                time.sleep(self.retry.delay(retry, self.retry.retry_after(response)))
                retry += 1
                continue
            raise error_from_response(response, request_id)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "MnemoClient":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    # --- ingest ---------------------------------------------------------

    def post_messages(
        self,
        subject: str,
        messages: Iterable[MessageLike],
        *,
        session: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> m.MessagesAccepted:
        """Record conversation messages (dicts or :class:`MessageInput`).

        A message without an ``id`` gets a random one before the first
        attempt, so retries are deduplicated by the server. ``session`` and
        ``agent`` apply to messages that do not set their own.
        """
        return self._call(ops.post_messages(subject, messages, session=session, agent=agent))

    def create_memory(
        self,
        subject: str,
        content: str,
        kind: m.MemoryKind,
        *,
        tags: Optional[List[str]] = None,
        confidence: Optional[float] = None,
        importance: Optional[float] = None,
        session: Optional[str] = None,
        agent: Optional[str] = None,
        sources: Optional[List[str]] = None,
    ) -> m.Memory:
        """Write a memory directly. Not retried once it may have reached the
        server (the API has no idempotency key for it)."""
        body = m.NewMemory(
            content=content,
            kind=kind,
            tags=tags,
            confidence=confidence,
            importance=importance,
            session=session,
            agent=agent,
            sources=sources,
        )
        return self._call(ops.create_memory(subject, body))

    def revise_memory(
        self,
        memory_id: Id,
        *,
        content: Optional[str] = None,
        kind: Optional[m.MemoryKind] = None,
        tags: Optional[List[str]] = None,
        confidence: Optional[float] = None,
        importance: Optional[float] = None,
        reason: Optional[str] = None,
        expected_version: Optional[int] = None,
        if_match: Optional[Union[int, str]] = None,
    ) -> m.Memory:
        """Record a revision. Pass the version you read as ``expected_version``
        (or ``if_match``) to get :class:`VersionConflict` instead of
        overwriting a newer version."""
        body = m.MemoryRevision(
            content=content,
            kind=kind,
            tags=tags,
            confidence=confidence,
            importance=importance,
            reason=reason,
            expected_version=expected_version,
        )
        return self._call(ops.revise_memory(memory_id, body, if_match=if_match))

    def delete_memory(self, memory_id: Id, *, reason: Optional[str] = None) -> m.Memory:
        return self._call(ops.delete_memory(memory_id, reason))

    def consolidate(self, subject: str, *, session: Optional[str] = None) -> m.ConsolidationAccepted:
        """Ask for the subject's waiting messages to be consolidated now
        (asynchronously: poll lists or search for the result)."""
        return self._call(ops.consolidate(subject, session))

    # --- retrieval ------------------------------------------------------

    def get_memory(self, memory_id: Id, *, as_of: Optional[ops.Instant] = None) -> m.Memory:
        """The memory now, or with ``as_of`` (a timezone-aware datetime or an
        RFC 3339 string) as it was then: a :class:`MemoryAsOf` naming the
        last event at or before the instant."""
        return self._call(ops.get_memory(memory_id, as_of=as_of))

    def memory_history(self, memory_id: Id) -> m.MemoryHistory:
        return self._call(ops.memory_history(memory_id))

    def list_memories(
        self,
        subject: str,
        *,
        kind: Optional[CsvLike] = None,
        tag: Optional[CsvLike] = None,
        state: Optional[CsvLike] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        as_of: Optional[ops.Instant] = None,
    ) -> Union[m.MemoryPage, m.MemoryAsOfPage]:
        """A page of the subject's memories, newest first; with ``as_of``, as
        they were then (a :class:`MemoryAsOfPage`)."""
        return self._call(
            ops.list_memories(subject, kind=kind, tag=tag, state=state, limit=limit, cursor=cursor, as_of=as_of)
        )

    def iter_memories(
        self,
        subject: str,
        *,
        kind: Optional[CsvLike] = None,
        tag: Optional[CsvLike] = None,
        state: Optional[CsvLike] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[m.Memory]:
        """Every memory of the subject matching the filters, newest first,
        following ``next_cursor`` page by page."""
        cursor: Optional[str] = None
        while True:
            page = self.list_memories(subject, kind=kind, tag=tag, state=state, limit=page_size, cursor=cursor)
            yield from page.memories
            if page.next_cursor is None or not page.memories:
                return
            cursor = page.next_cursor

    def search(
        self,
        subject: str,
        query: str,
        *,
        k: Optional[int] = None,
        mode: Optional[m.SearchMode] = None,
        filters: Optional[FiltersLike] = None,
        expand_depth: Optional[int] = None,
        include: Optional[List[m.IncludeKind]] = None,
        window: Optional[int] = None,
        feedback: Optional[bool] = None,
    ) -> m.SearchResults:
        body = m.SearchRequest(
            query=query,
            k=k,
            mode=mode,
            filters=ops._filters(filters),
            expand_depth=expand_depth,
            include=include,
            window=window,
            feedback=feedback,
        )
        return self._call(ops.search(subject, body))

    def context(
        self,
        subject: str,
        messages: Iterable[ContextMessageLike],
        *,
        last_n: Optional[int] = None,
        max_memories: Optional[int] = None,
        min_relevance: Optional[float] = None,
        token_budget: Optional[int] = None,
        mode: Optional[m.SearchMode] = None,
        filters: Optional[FiltersLike] = None,
        expand_depth: Optional[int] = None,
        include_profile: Optional[bool] = None,
        include: Optional[List[m.IncludeKind]] = None,
        window: Optional[int] = None,
        feedback: Optional[bool] = None,
    ) -> m.ContextResponse:
        """The memory block for the conversation's next turn. ``messages``
        may be OpenAI-style chat messages: only role and content are sent."""
        body = m.ContextRequest(
            messages=ops.context_messages(messages),
            last_n=last_n,
            max_memories=max_memories,
            min_relevance=min_relevance,
            token_budget=token_budget,
            mode=mode,
            filters=ops._filters(filters),
            expand_depth=expand_depth,
            include_profile=include_profile,
            include=include,
            window=window,
            feedback=feedback,
        )
        return self._call(ops.context(subject, body))

    def profile(self, subject: str, *, as_of: Optional[ops.Instant] = None) -> m.Profile:
        """The subject's latest profile; with ``as_of``, the last update
        recorded by then (a :class:`ProfileAsOf`)."""
        return self._call(ops.profile(subject, as_of=as_of))

    def get_profile(self, subject: str, *, as_of: Optional[ops.Instant] = None) -> m.Profile:
        """:meth:`profile` under the name the other reads follow."""
        return self.profile(subject, as_of=as_of)

    # --- audit of a subject's memories ------------------------------------

    def subject_changes(
        self,
        subject: str,
        *,
        from_: ops.Instant,
        to: Optional[ops.Instant] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> m.ChangePage:
        """What changed for the subject's memories in ``(from_, to]`` (``to``
        defaults to now), oldest first, each change with the memory before
        and after it."""
        return self._call(ops.subject_changes(subject, from_=from_, to=to, limit=limit, cursor=cursor))

    def list_subjects(
        self, *, prefix: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> m.SubjectPage:
        """A page of the tenant's subjects with their memories counted by
        state, by subject id; a subject-bound token sees its own."""
        return self._call(ops.list_subjects(prefix=prefix, limit=limit, cursor=cursor))

    # --- review ---------------------------------------------------------

    def list_reviews(
        self, *, subject: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> m.ReviewPage:
        return self._call(ops.list_reviews(subject=subject, limit=limit, cursor=cursor))

    def iter_reviews(self, *, subject: Optional[str] = None, page_size: Optional[int] = None) -> Iterator[m.Review]:
        """Every pending review, oldest first, following ``next_cursor``."""
        cursor: Optional[str] = None
        while True:
            page = self.list_reviews(subject=subject, limit=page_size, cursor=cursor)
            yield from page.reviews
            if page.next_cursor is None or not page.reviews:
                return
            cursor = page.next_cursor

    def review_stats(self, *, subject: Optional[str] = None, days: Optional[int] = None) -> m.ReviewStats:
        return self._call(ops.review_stats(subject=subject, days=days))

    def resolve_review(
        self,
        review_id: Id,
        decision: m.Decision,
        *,
        content: Optional[str] = None,
        kind: Optional[m.MemoryKind] = None,
        tags: Optional[List[str]] = None,
        note: Optional[str] = None,
    ) -> m.ReviewResolution:
        body = m.ReviewDecision(decision=decision, content=content, kind=kind, tags=tags, note=note)
        return self._call(ops.resolve_review(review_id, body))

    # --- audit and GDPR -------------------------------------------------

    def list_audit(
        self,
        *,
        subject: Optional[str] = None,
        actor: Optional[str] = None,
        type: Optional[CsvLike] = None,
        from_: Optional[Union[datetime, str]] = None,
        to: Optional[Union[datetime, str]] = None,
        cursor: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> m.AuditPage:
        return self._call(
            ops.list_audit(subject=subject, actor=actor, type=type, from_=from_, to=to, cursor=cursor, limit=limit)
        )

    def iter_audit(
        self,
        *,
        subject: Optional[str] = None,
        actor: Optional[str] = None,
        type: Optional[CsvLike] = None,
        from_: Optional[Union[datetime, str]] = None,
        to: Optional[Union[datetime, str]] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[m.Event]:
        """Every matching event of the tenant's log, oldest first."""
        cursor: Optional[int] = None
        while True:
            page = self.list_audit(
                subject=subject, actor=actor, type=type, from_=from_, to=to, cursor=cursor, limit=page_size
            )
            yield from page.events
            if page.next_cursor is None or not page.events:
                return
            cursor = page.next_cursor

    def export_subject(self, subject: str) -> m.Export:
        return self._call(ops.export_subject(subject))

    def erase_subject(self, subject: str) -> m.ErasureAccepted:
        """Start the subject's erasure; poll :meth:`get_erasure` or use
        :meth:`wait_for_erasure`. Not retried once it may have reached the
        server (each call starts a new erasure)."""
        return self._call(ops.erase_subject(subject))

    def get_erasure(self, erasure_id: Id) -> m.ErasureStatus:
        return self._call(ops.get_erasure(erasure_id))

    def wait_for_erasure(self, erasure_id: Id, *, timeout: float = 60.0, interval: float = 0.2) -> m.ErasureStatus:
        """Poll the erasure until it is ``completed``; raise ``TimeoutError`` otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.get_erasure(erasure_id)
            if status.status == "completed":
                return status
            if time.monotonic() >= deadline:
                raise TimeoutError(f"erasure {erasure_id} still {status.status} after {timeout}s")
            time.sleep(interval)

    def consolidation_report(self, *, days: Optional[int] = None) -> m.ConsolidationReport:
        return self._call(ops.consolidation_report(days=days))

    # --- operations -----------------------------------------------------

    def healthz(self) -> m.Health:
        return self._call(ops.healthz())

    def readyz(self) -> m.Health:
        return self._call(ops.readyz())

    def metrics(self) -> str:
        return self._call(ops.metrics())

    def openapi(self) -> Dict[str, Any]:
        return self._call(ops.openapi())


__all__ = ["MnemoClient"]
