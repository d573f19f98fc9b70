"""Typed models of every schema in mnemo's ``openapi.json``.

One class per ``components.schemas`` entry, named as in the spec, plus one
class per inline object the spec nests inside them. ``tests/test_models.py``
checks them against the spec (names, field names, required-ness, nullability,
enums), so a change to the API that is not mirrored here fails the tests.

Request models forbid unknown fields, as the server does; response models
allow them, so a newer server that adds a field does not break an older
client. Value constraints (lengths, ranges, patterns) are deliberately not
repeated here: the server is the authority on them and answers with a stable
error code, which the client raises as :class:`mnemo_client.errors.MnemoError`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

MemoryKind = Literal["fact", "preference", "decision", "rule", "status"]
MemoryState = Literal["active", "pending_review", "archived", "superseded", "deleted", "erased"]
Role = Literal["user", "assistant", "system", "tool"]
SearchMode = Literal["hybrid", "semantic", "keyword"]
IncludeKind = Literal["memories", "episodes"]
EventType = Literal[
    "MessageReceived",
    "MemoryCreated",
    "MemoryRevised",
    "MemoryMerged",
    "MemorySuperseded",
    "MemoryReinforced",
    "MemoryArchived",
    "MemoryRestored",
    "MemoryDeleted",
    "RelationAdded",
    "ReviewRequested",
    "ReviewResolved",
    "ProfileUpdated",
    "BatchConsolidated",
    "ExportGenerated",
    "ConsolidationRequested",
    "ErasureRequested",
    "SubjectErased",
    "EpisodesForgotten",
]
# The log grows new event types (the server already records
# ``BatchConsolidated``, which the spec does not list): an unknown type is
# kept as a plain string rather than failing the whole page.
OpenEventType = Union[EventType, str]
RelationKind = Literal["premise", "cause", "refines", "contradicts", "parallel"]
ReviewAction = Literal["create", "supersede", "merge_into"]
Decision = Literal["approve", "edit", "reject"]


class RequestModel(BaseModel):
    """A body the client sends: unknown fields are refused, as by the server."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ResponseModel(BaseModel):
    """A body the server sends: unknown fields are kept, for forward compatibility."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- Writes -----------------------------------------------------------------


class MessageInput(RequestModel):
    role: Role
    content: str
    id: Optional[str] = None
    timestamp: Optional[datetime] = None
    session: Optional[str] = None
    agent: Optional[str] = None


class MessageBatch(RequestModel):
    messages: List[MessageInput]


class AcceptedMessage(ResponseModel):
    """``MessagesAccepted.events[]``."""

    id: str
    event_id: str
    position: int
    duplicate: bool


class MessagesAccepted(ResponseModel):
    accepted: int
    duplicates: int
    events: List[AcceptedMessage]


class NewMemory(RequestModel):
    content: str
    kind: MemoryKind
    tags: Optional[List[str]] = None
    confidence: Optional[float] = None
    importance: Optional[float] = None
    session: Optional[str] = None
    agent: Optional[str] = None
    sources: Optional[List[str]] = None


class MemoryRevision(RequestModel):
    content: Optional[str] = None
    kind: Optional[MemoryKind] = None
    tags: Optional[List[str]] = None
    confidence: Optional[float] = None
    importance: Optional[float] = None
    reason: Optional[str] = None
    expected_version: Optional[int] = None


class MemoryDeletion(RequestModel):
    reason: Optional[str] = None


# --- Memories ---------------------------------------------------------------


class Producer(ResponseModel):
    strategy: str
    version: str
    model: Optional[str] = None
    prompt_version: Optional[str] = None


class MemoryProvenance(ResponseModel):
    """``Memory.provenance``."""

    source_event_ids: List[str]
    producer: Producer


class Relation(ResponseModel):
    from_: str = Field(alias="from")
    to: str
    relation: RelationKind
    confidence: float


class Memory(ResponseModel):
    id: str
    subject: str
    kind: MemoryKind
    content: Optional[str]
    tags: List[str]
    confidence: float
    importance: float
    state: MemoryState
    version: int
    provenance: MemoryProvenance
    session: Optional[str]
    agent: Optional[str]
    reinforcements: int
    superseded_by: Optional[str]
    created_at: datetime
    updated_at: datetime
    relations: List[Relation]


class MemoryPage(ResponseModel):
    memories: List[Memory]
    next_cursor: Optional[str]


# --- As of an instant, changes, subjects -----------------------------------------

ChangeKind = Literal["created", "revised", "superseded", "merged", "archived", "restored", "deleted", "reviewed"]


class AsOfEvent(ResponseModel):
    """The last event recorded at or before the instant."""

    id: str
    type: OpenEventType
    recorded_at: datetime
    actor: str
    reason: Optional[str]


class AsOf(ResponseModel):
    at: datetime
    event: AsOfEvent


class MemoryAsOf(Memory):
    """A memory as it was at an instant (``get_memory(..., as_of=...)``)."""

    as_of: AsOf


class MemoryAsOfPage(ResponseModel):
    memories: List[MemoryAsOf]
    next_cursor: Optional[str]


class ChangeProducer(ResponseModel):
    """``Change.producer``."""

    strategy: str
    model: Optional[str]
    prompt_version: Optional[str]


class ChangeReview(ResponseModel):
    """``Change.review``."""

    id: str
    decision: Decision


class Change(ResponseModel):
    memory_id: Optional[str]
    change: ChangeKind
    at: datetime
    event_id: str
    event_type: OpenEventType
    actor: str
    reason: Optional[str]
    producer: Optional[ChangeProducer]
    review: Optional[ChangeReview]
    before: Optional[Memory]
    after: Optional[Memory]


class ChangePage(ResponseModel):
    items: List[Change]
    next_cursor: Optional[str]


class SubjectMemoryCounts(ResponseModel):
    """``SubjectSummary.memories``: memories by state."""

    active: int
    pending_review: int
    archived: int
    superseded: int
    deleted: int


class SubjectSummary(ResponseModel):
    subject: str
    memories: SubjectMemoryCounts
    last_activity: Optional[datetime]


class SubjectPage(ResponseModel):
    items: List[SubjectSummary]
    next_cursor: Optional[str]


class HistoryEntry(ResponseModel):
    version: int
    event_id: str
    event_type: OpenEventType
    actor: str
    recorded_at: datetime
    correlation_id: Optional[str]
    reason: Optional[str]
    pii_found: Optional[Dict[str, int]]
    changes: Dict[str, Any]
    memory: Optional[Memory]


class MemoryHistory(ResponseModel):
    memory_id: str
    subject: str
    versions: List[HistoryEntry]


# --- Search and context -----------------------------------------------------


class SearchFilters(RequestModel):
    kinds: Optional[List[MemoryKind]] = None
    tags: Optional[List[str]] = None
    session: Optional[str] = None
    agent: Optional[str] = None
    from_: Optional[datetime] = Field(default=None, alias="from")
    to: Optional[datetime] = None
    min_importance: Optional[float] = None
    include_archived: Optional[bool] = None


class SearchRequest(RequestModel):
    query: str
    k: Optional[int] = None
    mode: Optional[SearchMode] = None
    filters: Optional[SearchFilters] = None
    expand_depth: Optional[int] = None
    include: Optional[List[IncludeKind]] = None
    window: Optional[int] = None
    feedback: Optional[bool] = None


class ScoreComponents(ResponseModel):
    fused: float
    dense_rank: Optional[int]
    sparse_rank: Optional[int]
    dense_similarity: Optional[float]
    relevance: float
    recency: float
    importance: float
    combined: float
    redundancy: float


class ResultProvenance(ResponseModel):
    """``SearchResult.provenance``."""

    source_event_ids: List[str]


class Via(ResponseModel):
    """``SearchResult.via``: the edge a graph-expanded result was reached through."""

    relation: Literal["premise", "cause"]
    of: str


class Episode(ResponseModel):
    id: str
    message_id: str
    role: Role
    content: str
    session: Optional[str] = None
    agent: Optional[str] = None
    timestamp: datetime
    dates: List[str]
    turns: List[Dict[str, Any]]


class SearchResult(ResponseModel):
    type: Literal["memory", "episode"]
    provenance: ResultProvenance
    memory: Optional[Memory] = None
    score: float
    components: ScoreComponents
    via: Optional[Via]
    episode: Optional[Episode] = None

    @property
    def content(self) -> Optional[str]:
        """The text of the result, whichever its type."""
        if self.memory is not None:
            return self.memory.content
        if self.episode is not None:
            return self.episode.content
        return None


class SearchResults(ResponseModel):
    results: List[SearchResult]


class ContextMessage(RequestModel):
    role: str
    content: str


class ContextRequest(RequestModel):
    messages: List[ContextMessage]
    last_n: Optional[int] = None
    max_memories: Optional[int] = None
    min_relevance: Optional[float] = None
    token_budget: Optional[int] = None
    mode: Optional[SearchMode] = None
    filters: Optional[SearchFilters] = None
    expand_depth: Optional[int] = None
    include_profile: Optional[bool] = None
    include: Optional[List[IncludeKind]] = None
    window: Optional[int] = None
    feedback: Optional[bool] = None


class Profile(ResponseModel):
    subject: str
    summary: str
    version: int
    updated_at: datetime
    memory_ids: List[str]
    covers_position: int
    producer: Optional[Producer]


class ProfileAsOf(Profile):
    """The profile as it was at an instant (``profile(..., as_of=...)``)."""

    as_of: AsOf


class ContextResponse(ResponseModel):
    block: str
    tokens: int
    query_tokens: int
    memories: List[SearchResult]
    episodes: List[SearchResult]
    profile: Optional[Profile] = None


# --- Consolidation ----------------------------------------------------------


class ConsolidationRequest(RequestModel):
    session: Optional[str] = None


class ConsolidationAccepted(ResponseModel):
    status: Literal["requested"]
    event_id: str


class ConsolidationTotals(ResponseModel):
    batches: int
    messages: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost: float


class Pricing(ResponseModel):
    """``ConsolidationReport.pricing``."""

    input_per_million: Optional[float] = None
    output_per_million: Optional[float] = None


class PerHundredMessages(ResponseModel):
    """``ConsolidationReport.report.per_100_messages``."""

    llm_calls: Optional[float] = None
    tokens: Optional[float] = None
    estimated_cost: Optional[float] = None


class ConsolidationReportBody(ResponseModel):
    """``ConsolidationReport.report``."""

    from_: Optional[datetime] = Field(default=None, alias="from")
    to: Optional[datetime] = None
    totals: Optional[ConsolidationTotals] = None
    per_100_messages: Optional[PerHundredMessages] = None
    fallbacks: Optional[Dict[str, int]] = None
    candidates: Optional[Dict[str, int]] = None
    models: Optional[Dict[str, int]] = None
    by_day: Optional[Dict[str, ConsolidationTotals]] = None


class ConsolidationReport(ResponseModel):
    tenant: str
    subject: Optional[str] = None
    days: int
    pricing: Pricing
    report: ConsolidationReportBody


# --- GDPR -------------------------------------------------------------------


class ExportMessage(ResponseModel):
    message_id: str
    event_id: str
    role: Role
    content: str
    timestamp: datetime
    session: Optional[str]
    agent: Optional[str]
    received_at: datetime


class ExportCounts(ResponseModel):
    """``Export.counts``."""

    messages: int
    memories: int
    events: int


class ExportedMemory(ResponseModel):
    """``Export.memories[]``: a memory with its full history."""

    memory: Memory
    history: List[HistoryEntry]


class ErasureStep(ResponseModel):
    store: str
    action: str
    count: int
    note: Optional[str] = None


class ErasureReceipt(ResponseModel):
    erasure_id: str
    tenant: str
    subject: str
    requested_at: datetime
    completed_at: datetime
    steps: List[ErasureStep]
    events_shredded: int


class Export(ResponseModel):
    tenant: str
    subject: str
    generated_at: datetime
    counts: ExportCounts
    messages: List[ExportMessage]
    memories: List[ExportedMemory]
    erasures: List[ErasureReceipt]


class ErasureAccepted(ResponseModel):
    erasure_id: str
    status: Literal["pending"]
    receipt: str


class ErasureStatus(ResponseModel):
    erasure_id: str
    subject: Optional[str]
    status: Literal["pending", "completed"]
    requested_at: datetime
    requested_by: str
    receipt: Optional[ErasureReceipt]


# --- Audit ------------------------------------------------------------------


class Event(ResponseModel):
    position: int
    event_id: str
    type: OpenEventType
    schema_version: int
    stream: str
    stream_version: int
    subject: Optional[str]
    actor: str
    correlation_id: Optional[str]
    causation_id: Optional[str]
    traceparent: Optional[str]
    recorded_at: datetime
    payload: Dict[str, Any]


class AuditPage(ResponseModel):
    events: List[Event]
    next_cursor: Optional[int]


# --- Review -----------------------------------------------------------------


class Review(ResponseModel):
    id: str
    subject: str
    proposed: str
    kind: MemoryKind
    tags: List[str]
    confidence: float
    action: ReviewAction
    target: Optional[str]
    reason: Optional[str]
    reason_code: Optional[Literal["review_band", "protected_conflict", "suspected_injection"]]
    signals: List[
        Literal[
            "ignore_instructions",
            "reveal_prompt",
            "role_override",
            "rule_override",
            "chat_markup",
            "not_from_user",
            "quoted_instruction",
            "injection_in_batch",
        ]
    ]
    excerpt: Optional[str]
    source_event_ids: List[str]
    producer: Optional[Producer]
    session: Optional[str]
    requested_at: datetime


class ReviewPage(ResponseModel):
    reviews: List[Review]
    next_cursor: Optional[str]


class ReviewDecision(RequestModel):
    decision: Decision
    content: Optional[str] = None
    kind: Optional[MemoryKind] = None
    tags: Optional[List[str]] = None
    note: Optional[str] = None


class ResolvedReview(ResponseModel):
    """``ReviewResolution.review``."""

    id: str
    subject: str
    decision: Decision
    action: ReviewAction
    target: Optional[str]
    proposed: Optional[str]
    edited: Optional[str]
    note: Optional[str]
    resolved_by: str
    resolved_at: datetime


class ReviewResolution(ResponseModel):
    review: ResolvedReview
    memory_id: Optional[str]
    memory: Optional[Memory]


class Thresholds(ResponseModel):
    """``ReviewStats.thresholds``."""

    auto: float
    review: float


class CurrentSplit(ResponseModel):
    """``ReviewStats.current_split``."""

    auto_accepted: int
    review: int
    discarded: int


class GridPoint(ResponseModel):
    """``ReviewStats.grid[]``."""

    threshold: float
    auto_accepted: int
    discarded: int


class ReviewCounts(ResponseModel):
    """``ReviewStats.reviews``."""

    decided: Dict[str, int]
    total_decided: int
    acceptance_rate: Optional[float]
    pending: int


class ReviewStats(ResponseModel):
    days: int
    since: datetime
    batches: int
    candidates: int
    routed: Dict[str, int]
    suspected_injections: int
    thresholds: Thresholds
    current_split: CurrentSplit
    grid: List[GridPoint]
    reviews: ReviewCounts


# --- Errors and operations --------------------------------------------------


class ErrorDetail(ResponseModel):
    """``Error.error``."""

    code: str
    message: str
    retry_after_seconds: Optional[int] = None
    """On 429 and 503 refusals: the ``Retry-After`` header's value."""
    limit: Optional[str] = None
    """On ``quota_exceeded`` / ``backlog_full`` / ``slow_down`` / ``insufficient_storage``: the limit that refused."""
    limit_value: Optional[int] = None


class Error(ResponseModel):
    error: ErrorDetail


class EmbedderInfo(ResponseModel):
    """``Health.embedder``."""

    kind: Literal["local", "openai", "lexical"]
    model: str
    dimension: int
    fallback: bool


class BacklogConsolidation(ResponseModel):
    """``Health.backlog.consolidation``: messages waiting for consolidation."""

    messages: int
    conversations: int
    oldest_seconds: Optional[float] = None


class Backlog(ResponseModel):
    """``Health.backlog``."""

    consolidation: Optional[BacklogConsolidation] = None
    unconsolidated: Optional[int] = None


class Health(ResponseModel):
    status: Literal["ok", "ready", "degraded"]
    degraded: Optional[List[str]] = None
    relay_lag: Optional[int] = None
    age_ms: Optional[int] = None
    """How long ago the backlog figures were read (a reading serves for up to a second)."""
    consumer_lag: Optional[Dict[str, Optional[int]]] = None
    consumer_oldest_seconds: Optional[Dict[str, Optional[float]]] = None
    embedder: Optional[EmbedderInfo] = None
    backlog: Optional[Backlog] = None
    ingest_pace: Optional[float] = None
    """Messages per second ingest admits while the consolidator trails; None while not paced."""
    disk_free_bytes: Optional[int] = None
    """Bytes free on the file system of the server's data dir; below ``[backlog] min_free_disk_bytes``
    the server is degraded and refuses new content with 507 ``insufficient_storage``."""


__all__ = [
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == __name__
] + [
    "MemoryKind",
    "MemoryState",
    "Role",
    "SearchMode",
    "IncludeKind",
    "EventType",
    "OpenEventType",
    "RelationKind",
    "ReviewAction",
    "Decision",
    "ChangeKind",
]
