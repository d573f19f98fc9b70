"""One request description per API operation, shared by the sync and async
clients so both send exactly the same requests."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from . import models as m

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

MessageLike = Union[m.MessageInput, Mapping[str, Any]]
ContextMessageLike = Union[m.ContextMessage, Mapping[str, Any]]
FiltersLike = Union[m.SearchFilters, Mapping[str, Any]]
CsvLike = Union[str, Sequence[str]]


@dataclass
class Call(Generic[T]):
    """An HTTP request and how to read its answer.

    ``idempotent`` says whether sending it twice has the effect of sending it
    once; only then are 5xx answers and failures after sending retried.
    """

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    idempotent: bool
    params: Optional[Dict[str, Any]] = None
    json: Optional[Any] = None
    headers: Dict[str, str] = field(default_factory=dict)


def _model(cls: "type[M]") -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate_json(response.content)


def _seg(value: str) -> str:
    # Ids are validated by the server; quoting keeps a malformed one from
    # turning into another path (it then gets the server's 400 invalid_id).
    return quote(str(value), safe="")


def _body(model: BaseModel) -> Dict[str, Any]:
    # Absent and null mean the same to the server for every optional field,
    # so leaving out what the caller did not set keeps bodies minimal.
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _csv(value: Optional[CsvLike]) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return ",".join(value)


def _params(**values: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, bool):
            value = "true" if value else "false"
        out[key] = value
    return out


def with_message_ids(messages: Iterable[MessageLike]) -> List[m.MessageInput]:
    """The messages as models, each with an id.

    The id is what makes a post idempotent (the server records an id once per
    subject), so it is fixed here, before the first attempt, and every retry
    of the request sends the same ids.
    """
    out = []
    for message in messages:
        model = message if isinstance(message, m.MessageInput) else m.MessageInput.model_validate(message)
        if model.id is None:
            model = model.model_copy(update={"id": str(uuid.uuid4())})
        out.append(model)
    return out


def post_messages(
    subject: str,
    messages: Iterable[MessageLike],
    *,
    session: Optional[str] = None,
    agent: Optional[str] = None,
) -> Call[m.MessagesAccepted]:
    batch = []
    for message in with_message_ids(messages):
        defaults = {}
        if session is not None and message.session is None:
            defaults["session"] = session
        if agent is not None and message.agent is None:
            defaults["agent"] = agent
        batch.append(message.model_copy(update=defaults) if defaults else message)
    return Call(
        "POST",
        f"/v1/subjects/{_seg(subject)}/messages",
        _model(m.MessagesAccepted),
        idempotent=True,
        json=_body(m.MessageBatch(messages=batch)),
    )


def create_memory(subject: str, memory: m.NewMemory) -> Call[m.Memory]:
    # No idempotency key exists for memory writes: a retry after the server
    # may have acted would create a second memory.
    return Call(
        "POST",
        f"/v1/subjects/{_seg(subject)}/memories",
        _model(m.Memory),
        idempotent=False,
        json=_body(memory),
    )


Instant = Union[datetime, str]


def list_memories(
    subject: str,
    *,
    kind: Optional[CsvLike] = None,
    tag: Optional[CsvLike] = None,
    state: Optional[CsvLike] = None,
    limit: Optional[int] = None,
    cursor: Optional[str] = None,
    as_of: Optional[Instant] = None,
) -> Call[Union[m.MemoryPage, m.MemoryAsOfPage]]:
    page: "type[Union[m.MemoryPage, m.MemoryAsOfPage]]" = m.MemoryPage if as_of is None else m.MemoryAsOfPage
    return Call(
        "GET",
        f"/v1/subjects/{_seg(subject)}/memories",
        _model(page),
        idempotent=True,
        params=_params(kind=_csv(kind), tag=_csv(tag), state=_csv(state), limit=limit, cursor=cursor, as_of=as_of),
    )


def get_memory(memory_id: Union[str, uuid.UUID], *, as_of: Optional[Instant] = None) -> Call[m.Memory]:
    # A MemoryAsOf is a Memory with its `as_of`.
    model: "type[m.Memory]" = m.Memory if as_of is None else m.MemoryAsOf
    return Call(
        "GET",
        f"/v1/memories/{_seg(str(memory_id))}",
        _model(model),
        idempotent=True,
        params=_params(as_of=as_of),
    )


def subject_changes(
    subject: str,
    *,
    from_: Instant,
    to: Optional[Instant] = None,
    limit: Optional[int] = None,
    cursor: Optional[str] = None,
) -> Call[m.ChangePage]:
    params = _params(to=to, limit=limit, cursor=cursor)
    params.update(_params(**{"from": from_}))
    return Call("GET", f"/v1/subjects/{_seg(subject)}/changes", _model(m.ChangePage), idempotent=True, params=params)


def list_subjects(
    *, prefix: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
) -> Call[m.SubjectPage]:
    return Call(
        "GET", "/v1/subjects", _model(m.SubjectPage), idempotent=True, params=_params(prefix=prefix, limit=limit, cursor=cursor)
    )


def revise_memory(
    memory_id: Union[str, uuid.UUID],
    revision: m.MemoryRevision,
    *,
    if_match: Optional[Union[int, str]] = None,
) -> Call[m.Memory]:
    headers = {}
    if if_match is not None:
        headers["If-Match"] = if_match if isinstance(if_match, str) else f'"{if_match}"'
    # Not retried on 5xx: without a version a repeat would record the change
    # twice, and with one a repeat of a write that did land answers 409,
    # hiding the success.
    return Call(
        "PATCH",
        f"/v1/memories/{_seg(str(memory_id))}",
        _model(m.Memory),
        idempotent=False,
        json=_body(revision),
        headers=headers,
    )


def delete_memory(memory_id: Union[str, uuid.UUID], reason: Optional[str] = None) -> Call[m.Memory]:
    # The server answers a second delete with 200 and records nothing.
    return Call(
        "DELETE",
        f"/v1/memories/{_seg(str(memory_id))}",
        _model(m.Memory),
        idempotent=True,
        json=_body(m.MemoryDeletion(reason=reason)) if reason is not None else None,
    )


def memory_history(memory_id: Union[str, uuid.UUID]) -> Call[m.MemoryHistory]:
    return Call(
        "GET", f"/v1/memories/{_seg(str(memory_id))}/history", _model(m.MemoryHistory), idempotent=True
    )


def _filters(filters: Optional[FiltersLike]) -> Optional[m.SearchFilters]:
    if filters is None or isinstance(filters, m.SearchFilters):
        return filters
    return m.SearchFilters.model_validate(filters)


def search(subject: str, request: m.SearchRequest) -> Call[m.SearchResults]:
    return Call(
        "POST",
        f"/v1/subjects/{_seg(subject)}/search",
        _model(m.SearchResults),
        idempotent=True,
        json=_body(request),
    )


def context(subject: str, request: m.ContextRequest) -> Call[m.ContextResponse]:
    return Call(
        "POST",
        f"/v1/subjects/{_seg(subject)}/context",
        _model(m.ContextResponse),
        idempotent=True,
        json=_body(request),
    )


def consolidate(subject: str, session: Optional[str] = None) -> Call[m.ConsolidationAccepted]:
    # A repeated request records a second ConsolidationRequested event and
    # does nothing more (the messages it covers are consolidated once).
    return Call(
        "POST",
        f"/v1/subjects/{_seg(subject)}/consolidate",
        _model(m.ConsolidationAccepted),
        idempotent=True,
        json=_body(m.ConsolidationRequest(session=session)) if session is not None else None,
    )


def profile(subject: str, *, as_of: Optional[Instant] = None) -> Call[m.Profile]:
    # A ProfileAsOf is a Profile with its `as_of`.
    model: "type[m.Profile]" = m.Profile if as_of is None else m.ProfileAsOf
    return Call(
        "GET", f"/v1/subjects/{_seg(subject)}/profile", _model(model), idempotent=True, params=_params(as_of=as_of)
    )


def list_reviews(
    *, subject: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None
) -> Call[m.ReviewPage]:
    return Call(
        "GET",
        "/v1/review",
        _model(m.ReviewPage),
        idempotent=True,
        params=_params(subject=subject, limit=limit, cursor=cursor),
    )


def review_stats(*, subject: Optional[str] = None, days: Optional[int] = None) -> Call[m.ReviewStats]:
    return Call(
        "GET", "/v1/review/stats", _model(m.ReviewStats), idempotent=True, params=_params(subject=subject, days=days)
    )


def resolve_review(review_id: Union[str, uuid.UUID], decision: m.ReviewDecision) -> Call[m.ReviewResolution]:
    # The same decision again answers the first resolution, so a retry is safe.
    return Call(
        "POST",
        f"/v1/review/{_seg(str(review_id))}",
        _model(m.ReviewResolution),
        idempotent=True,
        json=_body(decision),
    )


def list_audit(
    *,
    subject: Optional[str] = None,
    actor: Optional[str] = None,
    type: Optional[CsvLike] = None,
    from_: Optional[Union[datetime, str]] = None,
    to: Optional[Union[datetime, str]] = None,
    cursor: Optional[int] = None,
    limit: Optional[int] = None,
) -> Call[m.AuditPage]:
    params = _params(subject=subject, actor=actor, type=_csv(type), to=to, cursor=cursor, limit=limit)
    params.update(_params(**{"from": from_}))
    return Call("GET", "/v1/audit", _model(m.AuditPage), idempotent=True, params=params)


def export_subject(subject: str) -> Call[m.Export]:
    # Each export is recorded as an event; a repeat records another, which is
    # what a second export would do anyway.
    return Call("GET", f"/v1/subjects/{_seg(subject)}/export", _model(m.Export), idempotent=True)


def erase_subject(subject: str) -> Call[m.ErasureAccepted]:
    # Each call starts a new erasure: not repeated after the server may have acted.
    return Call("DELETE", f"/v1/subjects/{_seg(subject)}", _model(m.ErasureAccepted), idempotent=False)


def get_erasure(erasure_id: Union[str, uuid.UUID]) -> Call[m.ErasureStatus]:
    return Call("GET", f"/v1/erasures/{_seg(str(erasure_id))}", _model(m.ErasureStatus), idempotent=True)


def consolidation_report(*, days: Optional[int] = None) -> Call[m.ConsolidationReport]:
    return Call(
        "GET", "/v1/consolidation/report", _model(m.ConsolidationReport), idempotent=True, params=_params(days=days)
    )


def healthz() -> Call[m.Health]:
    return Call("GET", "/healthz", _model(m.Health), idempotent=True)


def readyz() -> Call[m.Health]:
    return Call("GET", "/readyz", _model(m.Health), idempotent=True)


def metrics() -> Call[str]:
    return Call("GET", "/metrics", lambda r: r.text, idempotent=True)


def openapi() -> Call[Dict[str, Any]]:
    return Call("GET", "/openapi.json", lambda r: r.json(), idempotent=True)


def context_messages(messages: Iterable[ContextMessageLike]) -> List[m.ContextMessage]:
    out = []
    for message in messages:
        if isinstance(message, m.ContextMessage):
            out.append(message)
        else:
            # Chat messages carry more than role and content (name, tool
            # calls…); the context endpoint refuses unknown fields.
            content = message.get("content")
            out.append(m.ContextMessage(role=str(message.get("role")), content=_text(content)))
    return out


def _text(content: Any) -> str:
    """The text of an OpenAI-style message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    return str(content)
