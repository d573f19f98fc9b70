/**
 * Friendly names for the types generated from mnemo's OpenAPI document
 * (src/schema.ts, regenerated with `npm run generate`).
 */
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];

export type MessageInput = Schemas["MessageInput"];
export type MessageBatch = Schemas["MessageBatch"];
export type MessagesAccepted = Schemas["MessagesAccepted"];
export type NewMemory = Schemas["NewMemory"];
export type MemoryRevision = Schemas["MemoryRevision"];
export type MemoryDeletion = Schemas["MemoryDeletion"];
export type Producer = Schemas["Producer"];
export type Memory = Schemas["Memory"];
export type MemoryKind = Schemas["Memory"]["kind"];
export type MemoryState = Schemas["Memory"]["state"];
export type MemoryPage = Schemas["MemoryPage"];
export type HistoryEntry = Schemas["HistoryEntry"];
export type MemoryHistory = Schemas["MemoryHistory"];
export type SearchFilters = Schemas["SearchFilters"];
export type SearchRequest = Schemas["SearchRequest"];
export type ScoreComponents = Schemas["ScoreComponents"];
export type SearchResult = Schemas["SearchResult"];
export type SearchResults = Schemas["SearchResults"];
export type ContextMessage = Schemas["ContextMessage"];
export type ContextRequest = Schemas["ContextRequest"];
export type ContextResponse = Schemas["ContextResponse"];
export type ConsolidationRequest = Schemas["ConsolidationRequest"];
export type ConsolidationAccepted = Schemas["ConsolidationAccepted"];
export type ExportMessage = Schemas["ExportMessage"];
export type Export = Schemas["Export"];
export type AuditEvent = Schemas["Event"];
export type AuditPage = Schemas["AuditPage"];
export type ErasureAccepted = Schemas["ErasureAccepted"];
export type ErasureStep = Schemas["ErasureStep"];
export type ErasureReceipt = Schemas["ErasureReceipt"];
export type ErasureStatus = Schemas["ErasureStatus"];
export type ErrorBody = Schemas["Error"];
export type Health = Schemas["Health"];
export type Relation = Schemas["Relation"];
export type Profile = Schemas["Profile"];
export type Review = Schemas["Review"];
export type ReviewPage = Schemas["ReviewPage"];
export type ReviewDecision = Schemas["ReviewDecision"];
export type ReviewResolution = Schemas["ReviewResolution"];
export type ReviewStats = Schemas["ReviewStats"];
export type ConsolidationTotals = Schemas["ConsolidationTotals"];
export type ConsolidationReport = Schemas["ConsolidationReport"];
export type Episode = Schemas["Episode"];
export type AsOf = Schemas["AsOf"];
export type AsOfEvent = Schemas["AsOfEvent"];
export type MemoryAsOf = Schemas["MemoryAsOf"];
export type MemoryAsOfPage = Schemas["MemoryAsOfPage"];
export type ProfileAsOf = Schemas["ProfileAsOf"];
export type Change = Schemas["Change"];
export type ChangeKind = Schemas["Change"]["change"];
export type ChangePage = Schemas["ChangePage"];
export type SubjectSummary = Schemas["SubjectSummary"];
export type SubjectPage = Schemas["SubjectPage"];

type QueryOf<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>;

/** Filters and paging of GET /v1/subjects/{subject}/memories. */
export type ListMemoriesQuery = QueryOf<"listMemories">;
/** Window and paging of GET /v1/subjects/{subject}/changes. */
export type SubjectChangesQuery = QueryOf<"subjectChanges">;
/** Prefix and paging of GET /v1/subjects. */
export type ListSubjectsQuery = QueryOf<"listSubjects">;
/** Filters and paging of GET /v1/audit. */
export type ListAuditQuery = QueryOf<"listAuditEvents">;
/** Filters and paging of GET /v1/review. */
export type ListReviewsQuery = QueryOf<"listReviews">;
/** Window and subject of GET /v1/review/stats. */
export type ReviewStatsQuery = QueryOf<"reviewStats">;
/** Window of GET /v1/consolidation/report. */
export type ConsolidationReportQuery = QueryOf<"getConsolidationReport">;
