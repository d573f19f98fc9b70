/**
 * MnemoClient: one method per operation of mnemo's HTTP API, typed with the
 * types generated from its OpenAPI document. Uses only `fetch`, so it runs on
 * Node 20+, Deno, Bun and in browsers.
 */
import {
  MnemoConnectionError,
  MnemoError,
  errorForStatus,
} from "./errors.js";
import {
  backoffDelay,
  parseRetryAfter,
  resolveRetryOptions,
  sleep,
  type ResolvedRetryOptions,
  type RetryOptions,
} from "./retry.js";
import type {
  AuditEvent,
  AuditPage,
  ConsolidationAccepted,
  ConsolidationReport,
  ConsolidationReportQuery,
  ConsolidationRequest,
  ContextRequest,
  ContextResponse,
  ErasureAccepted,
  ErasureStatus,
  Export,
  Health,
  ListAuditQuery,
  ListMemoriesQuery,
  ListReviewsQuery,
  ListSubjectsQuery,
  Memory,
  MemoryAsOf,
  MemoryAsOfPage,
  MemoryHistory,
  MemoryPage,
  MemoryRevision,
  MessageBatch,
  MessageInput,
  MessagesAccepted,
  NewMemory,
  Profile,
  ProfileAsOf,
  Review,
  ReviewDecision,
  ReviewPage,
  ReviewResolution,
  ReviewStats,
  ReviewStatsQuery,
  SearchRequest,
  SearchResults,
  ChangePage,
  SubjectChangesQuery,
  SubjectPage,
} from "./types.js";
import { randomId } from "./uuid.js";

/** The server's default listen address. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

export type TokenSource = string | (() => string | Promise<string>);

export interface MnemoClientOptions {
  /** The server's URL. Default: `MNEMO_URL` where `process.env` exists, else `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /**
   * The bearer token (a JWT), or a function returning one (called before
   * every attempt, so it can refresh). Default: `MNEMO_TOKEN` where
   * `process.env` exists.
   */
  token?: TokenSource;
  /** The fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Retry policy, or `false` to never retry. See {@link RetryOptions}. */
  retry?: RetryOptions | false;
  /** Time limit of one attempt in milliseconds (default 30000; 0 for none). */
  timeoutMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** Options of a single call. */
export interface CallOptions {
  /** Aborts the call, retries included. */
  signal?: AbortSignal;
  /**
   * `X-Request-Id` (a UUID) recorded as the correlation id of every event the
   * call appends. Default: a fresh UUID per call, the same on every retry.
   */
  requestId?: string;
  /** W3C `traceparent` to continue a trace. */
  traceparent?: string;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
  /** This call's retry policy, replacing the client's. */
  retry?: RetryOptions | false;
}

/** An instant: a `Date`, or an RFC 3339 string (`2026-01-31T12:00:00Z`). */
export type Instant = Date | string;

function instant(value: Instant): string {
  return typeof value === "string" ? value : value.toISOString();
}

export interface AsOfOptions extends CallOptions {
  /**
   * Read the resource as it was at this instant, folded from the log: the
   * answer carries an `as_of` object naming the last event at or before it.
   */
  asOf?: Instant;
}

export interface ReviseOptions extends CallOptions {
  /**
   * The version the correction is based on, sent as `If-Match`: the write
   * fails with 409 `version_conflict` when the memory moved on. With it (or
   * `expected_version` in the revision) a failed call is retried, since a
   * re-sent correction cannot apply twice; without, it is not.
   */
  ifMatch?: number | string;
}

export interface DeleteOptions extends CallOptions {
  /** Why the memory is deleted (kept in its history, PII-scrubbed). */
  reason?: string;
}

export interface WaitOptions {
  /** How long to wait in total (default 30000 ms). */
  timeoutMs?: number;
  /** Delay between polls (default 200 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
}

type QueryValue = string | number | boolean | null | undefined;

interface RequestSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, QueryValue> | undefined;
  /** The JSON body; `undefined` sends none. */
  body?: unknown;
  /**
   * Whether re-sending the request cannot record anything twice. Only such
   * requests are retried on 5xx and network errors; every request is
   * retried on 429.
   */
  idempotent: boolean;
  /** `text` for the endpoints that answer text (metrics, docs). */
  responseType?: "json" | "text";
  headers?: Record<string, string | undefined>;
}

function processEnv(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

export class MnemoClient {
  readonly baseUrl: string;
  private readonly token: TokenSource | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly retry: ResolvedRetryOptions;
  private readonly timeoutMs: number;
  private readonly headers: Record<string, string>;

  constructor(options: MnemoClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? processEnv("MNEMO_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.token = options.token ?? processEnv("MNEMO_TOKEN");
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new TypeError("no fetch implementation: pass options.fetch");
    }
    // Call the global fetch unbound from `this` (browsers require it).
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retry = resolveRetryOptions(options.retry);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.headers = { ...(options.headers ?? {}) };
  }

  // ---- ingest -------------------------------------------------------------

  /**
   * Records conversation messages of a subject (POST /v1/subjects/{subject}/messages).
   * Every message without an `id` gets one (a random UUID) before the first
   * attempt, so the server deduplicates a retried batch and a message is
   * stored once however often it is sent. The input is not modified.
   */
  async postMessages(
    subject: string,
    messages: MessageInput[] | MessageBatch,
    options?: CallOptions,
  ): Promise<MessagesAccepted> {
    const list = Array.isArray(messages) ? messages : messages.messages;
    const withIds = list.map((m) => (m.id == null ? { ...m, id: randomId() } : { ...m }));
    return this.request<MessagesAccepted>(
      {
        method: "POST",
        path: `/v1/subjects/${seg(subject)}/messages`,
        body: { messages: withIds },
        idempotent: true,
      },
      options,
    );
  }

  /**
   * Writes a memory directly (POST /v1/subjects/{subject}/memories). The API
   * takes no idempotency key, so a failed create is not retried (except on
   * 429, which means it was not processed).
   */
  async createMemory(subject: string, memory: NewMemory, options?: CallOptions): Promise<Memory> {
    return this.request<Memory>(
      { method: "POST", path: `/v1/subjects/${seg(subject)}/memories`, body: memory, idempotent: false },
      options,
    );
  }

  /**
   * Corrects a memory (PATCH /v1/memories/{id}): a new version. Retried only
   * when the expected version is given (`options.ifMatch` or
   * `revision.expected_version`).
   */
  async reviseMemory(id: string, revision: MemoryRevision, options?: ReviseOptions): Promise<Memory> {
    const ifMatch = options?.ifMatch;
    const versioned = ifMatch !== undefined || (revision.expected_version !== undefined && revision.expected_version !== null);
    return this.request<Memory>(
      {
        method: "PATCH",
        path: `/v1/memories/${seg(id)}`,
        body: revision,
        idempotent: versioned,
        headers: { "If-Match": ifMatch === undefined ? undefined : `"${String(ifMatch).replace(/"/g, "")}"` },
      },
      options,
    );
  }

  /** Marks a memory deleted (DELETE /v1/memories/{id}); idempotent. */
  async deleteMemory(id: string, options?: DeleteOptions): Promise<Memory> {
    return this.request<Memory>(
      {
        method: "DELETE",
        path: `/v1/memories/${seg(id)}`,
        body: options?.reason === undefined ? undefined : { reason: options.reason },
        idempotent: true,
      },
      options,
    );
  }

  /**
   * Asks for the subject's waiting messages to be consolidated now (POST
   * /v1/subjects/{subject}/consolidate). Asynchronous: poll the list or
   * search for the memories.
   */
  async consolidate(
    subject: string,
    request?: ConsolidationRequest,
    options?: CallOptions,
  ): Promise<ConsolidationAccepted> {
    return this.request<ConsolidationAccepted>(
      { method: "POST", path: `/v1/subjects/${seg(subject)}/consolidate`, body: request, idempotent: true },
      options,
    );
  }

  // ---- retrieval ----------------------------------------------------------

  /**
   * One page of a subject's memories, newest first (GET /v1/subjects/{subject}/memories).
   * With `asOf`, the page as it was then, each memory with its `as_of`.
   */
  async listMemories(subject: string, query: ListMemoriesQuery, options: AsOfOptions & { asOf: Instant }): Promise<MemoryAsOfPage>;
  async listMemories(subject: string, query?: ListMemoriesQuery, options?: AsOfOptions): Promise<MemoryPage>;
  async listMemories(subject: string, query: ListMemoriesQuery = {}, options?: AsOfOptions): Promise<MemoryPage | MemoryAsOfPage> {
    const asOf = options?.asOf === undefined ? {} : { as_of: instant(options.asOf) };
    return this.request<MemoryPage>(
      { method: "GET", path: `/v1/subjects/${seg(subject)}/memories`, query: { ...query, ...asOf }, idempotent: true },
      options,
    );
  }

  /** Every memory of a subject matching `query`, following the pages' cursors. */
  async *iterMemories(subject: string, query: ListMemoriesQuery = {}, options?: CallOptions): AsyncGenerator<Memory, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.listMemories(subject, { ...query, cursor }, options);
      yield* page.memories;
      if (page.next_cursor == null) return;
      if (page.next_cursor === cursor) throw new Error(`the server repeated cursor ${cursor}`);
      cursor = page.next_cursor;
    }
  }

  /**
   * A memory at its current version (GET /v1/memories/{id}); read-your-writes.
   * With `asOf`, the memory as it was then, with its `as_of`.
   */
  async getMemory(id: string, options: AsOfOptions & { asOf: Instant }): Promise<MemoryAsOf>;
  async getMemory(id: string, options?: AsOfOptions): Promise<Memory>;
  async getMemory(id: string, options?: AsOfOptions): Promise<Memory | MemoryAsOf> {
    const query = options?.asOf === undefined ? undefined : { as_of: instant(options.asOf) };
    return this.request<Memory>({ method: "GET", path: `/v1/memories/${seg(id)}`, query, idempotent: true }, options);
  }

  /** Every version of a memory, oldest first (GET /v1/memories/{id}/history). */
  async memoryHistory(id: string, options?: CallOptions): Promise<MemoryHistory> {
    return this.request<MemoryHistory>(
      { method: "GET", path: `/v1/memories/${seg(id)}/history`, idempotent: true },
      options,
    );
  }

  /** Hybrid search of a subject's memories and episodes (POST /v1/subjects/{subject}/search). */
  async search(subject: string, request: SearchRequest | string, options?: CallOptions): Promise<SearchResults> {
    const body: SearchRequest = typeof request === "string" ? { query: request } : request;
    return this.request<SearchResults>(
      { method: "POST", path: `/v1/subjects/${seg(subject)}/search`, body, idempotent: true },
      options,
    );
  }

  /**
   * The memory block for the agent's next turn, built from the end of the
   * conversation (POST /v1/subjects/{subject}/context).
   */
  async context(subject: string, request: ContextRequest, options?: CallOptions): Promise<ContextResponse> {
    return this.request<ContextResponse>(
      { method: "POST", path: `/v1/subjects/${seg(subject)}/context`, body: request, idempotent: true },
      options,
    );
  }

  /**
   * The subject's latest rolling profile (GET /v1/subjects/{subject}/profile); 404 when it has none.
   * With `asOf`, the last update recorded by then, with its `as_of`.
   */
  async profile(subject: string, options: AsOfOptions & { asOf: Instant }): Promise<ProfileAsOf>;
  async profile(subject: string, options?: AsOfOptions): Promise<Profile>;
  async profile(subject: string, options?: AsOfOptions): Promise<Profile | ProfileAsOf> {
    const query = options?.asOf === undefined ? undefined : { as_of: instant(options.asOf) };
    return this.request<Profile>(
      { method: "GET", path: `/v1/subjects/${seg(subject)}/profile`, query, idempotent: true },
      options,
    );
  }

  /** {@link MnemoClient.profile} under the name the other reads follow. */
  async getProfile(subject: string, options: AsOfOptions & { asOf: Instant }): Promise<ProfileAsOf>;
  async getProfile(subject: string, options?: AsOfOptions): Promise<Profile>;
  async getProfile(subject: string, options?: AsOfOptions): Promise<Profile | ProfileAsOf> {
    return this.profile(subject, options);
  }

  // ---- audit of a subject's memories --------------------------------------

  /**
   * What changed for a subject's memories in `(from, to]`, oldest first, each
   * change with the memory before and after it
   * (GET /v1/subjects/{subject}/changes). `to` defaults to now.
   */
  async subjectChanges(
    subject: string,
    query: Omit<SubjectChangesQuery, "from" | "to"> & { from: Instant; to?: Instant },
    options?: CallOptions,
  ): Promise<ChangePage> {
    const { from, to, ...rest } = query;
    return this.request<ChangePage>(
      {
        method: "GET",
        path: `/v1/subjects/${seg(subject)}/changes`,
        query: { ...rest, from: instant(from), to: to === undefined ? undefined : instant(to) },
        idempotent: true,
      },
      options,
    );
  }

  /**
   * One page of the tenant's subjects with their memories counted by state,
   * by subject id (GET /v1/subjects). A subject-bound token sees its own.
   */
  async listSubjects(query: ListSubjectsQuery = {}, options?: CallOptions): Promise<SubjectPage> {
    return this.request<SubjectPage>({ method: "GET", path: "/v1/subjects", query, idempotent: true }, options);
  }

  // ---- review -------------------------------------------------------------

  /** One page of pending reviews, oldest first (GET /v1/review). */
  async listReviews(query: ListReviewsQuery = {}, options?: CallOptions): Promise<ReviewPage> {
    return this.request<ReviewPage>({ method: "GET", path: "/v1/review", query, idempotent: true }, options);
  }

  /** Every pending review matching `query`, following the pages' cursors. */
  async *iterReviews(query: ListReviewsQuery = {}, options?: CallOptions): AsyncGenerator<Review, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.listReviews({ ...query, cursor }, options);
      yield* page.reviews;
      if (page.next_cursor == null) return;
      if (page.next_cursor === cursor) throw new Error(`the server repeated cursor ${cursor}`);
      cursor = page.next_cursor;
    }
  }

  /** Review and threshold statistics (GET /v1/review/stats). */
  async reviewStats(query: ReviewStatsQuery = {}, options?: CallOptions): Promise<ReviewStats> {
    return this.request<ReviewStats>({ method: "GET", path: "/v1/review/stats", query, idempotent: true }, options);
  }

  /** Approves, edits or rejects a pending review (POST /v1/review/{id}); the same decision again is answered with the first resolution. */
  async resolveReview(id: string, decision: ReviewDecision, options?: CallOptions): Promise<ReviewResolution> {
    return this.request<ReviewResolution>(
      { method: "POST", path: `/v1/review/${seg(id)}`, body: decision, idempotent: true },
      options,
    );
  }

  // ---- audit --------------------------------------------------------------

  /** One page of the tenant's event log, oldest first (GET /v1/audit). */
  async listAudit(query: ListAuditQuery = {}, options?: CallOptions): Promise<AuditPage> {
    return this.request<AuditPage>({ method: "GET", path: "/v1/audit", query, idempotent: true }, options);
  }

  /** Every event matching `query`, following the pages' cursors. */
  async *iterAudit(query: ListAuditQuery = {}, options?: CallOptions): AsyncGenerator<AuditEvent, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.listAudit({ ...query, cursor }, options);
      yield* page.events;
      if (page.next_cursor == null) return;
      if (page.next_cursor === cursor) throw new Error(`the server repeated cursor ${cursor}`);
      cursor = page.next_cursor;
    }
  }

  /** What consolidation cost the tenant (GET /v1/consolidation/report). */
  async consolidationReport(query: ConsolidationReportQuery = {}, options?: CallOptions): Promise<ConsolidationReport> {
    return this.request<ConsolidationReport>(
      { method: "GET", path: "/v1/consolidation/report", query, idempotent: true },
      options,
    );
  }

  // ---- GDPR ---------------------------------------------------------------

  /** Everything held about a subject (GET /v1/subjects/{subject}/export); recorded as an event. */
  async exportSubject(subject: string, options?: CallOptions): Promise<Export> {
    return this.request<Export>(
      { method: "GET", path: `/v1/subjects/${seg(subject)}/export`, idempotent: true },
      options,
    );
  }

  /**
   * Starts the erasure of a subject (DELETE /v1/subjects/{subject}). Each
   * call starts a new erasure, so a failed call is not retried (except on
   * 429). Poll {@link getErasure} or use {@link waitForErasure}.
   */
  async eraseSubject(subject: string, options?: CallOptions): Promise<ErasureAccepted> {
    return this.request<ErasureAccepted>(
      { method: "DELETE", path: `/v1/subjects/${seg(subject)}`, idempotent: false },
      options,
    );
  }

  /** An erasure's status, with its receipt once completed (GET /v1/erasures/{id}). */
  async getErasure(id: string, options?: CallOptions): Promise<ErasureStatus> {
    return this.request<ErasureStatus>({ method: "GET", path: `/v1/erasures/${seg(id)}`, idempotent: true }, options);
  }

  /** Polls an erasure until it is `completed` and returns its status with the receipt. */
  async waitForErasure(id: string, options: WaitOptions & CallOptions = {}): Promise<ErasureStatus> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const status = await this.getErasure(id, options);
      if (status.status === "completed") return status;
      if (Date.now() >= deadline) {
        throw new MnemoError({
          status: 0,
          code: "timeout",
          message: `erasure ${id} still ${status.status} after ${options.timeoutMs ?? 30_000} ms`,
        });
      }
      await sleep(options.intervalMs ?? 200, options.signal);
    }
  }

  // ---- operations ---------------------------------------------------------

  /** Liveness (GET /healthz). */
  async healthz(options?: CallOptions): Promise<Health> {
    return this.request<Health>({ method: "GET", path: "/healthz", idempotent: true }, options);
  }

  /** Readiness with the relay and consumer lags (GET /readyz); 503 `not_ready` throws. */
  async readyz(options?: CallOptions): Promise<Health> {
    return this.request<Health>({ method: "GET", path: "/readyz", idempotent: true }, options);
  }

  /** Prometheus metrics, as text (GET /metrics). */
  async metrics(options?: CallOptions): Promise<string> {
    return this.request<string>({ method: "GET", path: "/metrics", idempotent: true, responseType: "text" }, options);
  }

  /** The server's OpenAPI document (GET /openapi.json). */
  async openapiDocument(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.request<Record<string, unknown>>({ method: "GET", path: "/openapi.json", idempotent: true }, options);
  }

  /** The HTML API reference (GET /docs). */
  async docsPage(options?: CallOptions): Promise<string> {
    return this.request<string>({ method: "GET", path: "/docs", idempotent: true, responseType: "text" }, options);
  }

  // ---- transport ----------------------------------------------------------

  private url(path: string, query: Record<string, QueryValue> | undefined): string {
    let url = this.baseUrl + path;
    if (query) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query)) {
        if (value !== undefined && value !== null) params.append(key, String(value));
      }
      const qs = params.toString();
      if (qs) url += `?${qs}`;
    }
    return url;
  }

  private async authorization(): Promise<string | undefined> {
    if (this.token === undefined) return undefined;
    const token = typeof this.token === "function" ? await this.token() : this.token;
    return token ? `Bearer ${token}` : undefined;
  }

  private async request<T>(spec: RequestSpec, options: CallOptions = {}): Promise<T> {
    const retry = options.retry === undefined ? this.retry : resolveRetryOptions(options.retry);
    const requestId = options.requestId ?? randomId();
    const url = this.url(spec.path, spec.query);
    const endpoint = `${spec.method} ${spec.path}`;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const signal = options.signal;

    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const headers: Record<string, string> = {
        Accept: spec.responseType === "text" ? "*/*" : "application/json",
        ...this.headers,
        "X-Request-Id": requestId,
      };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const auth = await this.authorization();
      if (auth) headers["Authorization"] = auth;
      if (options.traceparent) headers["traceparent"] = options.traceparent;
      for (const [k, v] of Object.entries(spec.headers ?? {})) if (v !== undefined) headers[k] = v;
      Object.assign(headers, options.headers ?? {});

      let error: MnemoError;
      let retryable: boolean;
      let waitMs: number | undefined;
      const attemptSignal = this.attemptSignal(signal);
      try {
        const init: RequestInit = { method: spec.method, headers, signal: attemptSignal.signal };
        if (body !== undefined) init.body = body;
        const response = await this.fetchImpl(url, init);
        if (response.ok) {
          return (await this.readBody(response, spec.responseType ?? "json")) as T;
        }
        const retryAfterMs = parseRetryAfter(response.headers.get("Retry-After"));
        error = await this.errorFrom(response, { requestId, endpoint, attempts: attempt, retryAfterMs });
        retryable = response.status === 429 || (spec.idempotent && retry.retryStatuses(response.status));
        if (retryable && retryAfterMs !== undefined) {
          if (retryAfterMs > retry.maxRetryAfterMs) retryable = false;
          else waitMs = retryAfterMs;
        }
      } catch (cause) {
        if (signal?.aborted) throw signal.reason;
        if (cause instanceof MnemoError) throw cause;
        const timedOut = attemptSignal.timedOut();
        error = new MnemoConnectionError({
          status: 0,
          code: timedOut ? "timeout" : "network_error",
          message: timedOut
            ? `${endpoint}: no answer within ${this.timeoutMs} ms`
            : `${endpoint}: ${cause instanceof Error ? cause.message : String(cause)}`,
          requestId,
          endpoint,
          attempts: attempt,
          cause,
        });
        retryable = spec.idempotent;
      } finally {
        attemptSignal.dispose();
      }
      if (!retryable || attempt > retry.maxRetries) throw error;
      await sleep(waitMs ?? backoffDelay(attempt - 1, retry), signal);
    }
  }

  /** A signal that aborts on the caller's signal or when the attempt's time is up. */
  private attemptSignal(outer: AbortSignal | undefined): {
    signal: AbortSignal;
    timedOut: () => boolean;
    dispose: () => void;
  } {
    const controller = new AbortController();
    let expired = false;
    const onAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    const timer =
      this.timeoutMs > 0
        ? setTimeout(() => {
            expired = true;
            controller.abort(new Error("attempt timed out"));
          }, this.timeoutMs)
        : undefined;
    return {
      signal: controller.signal,
      timedOut: () => expired,
      dispose: () => {
        if (timer !== undefined) clearTimeout(timer);
        outer?.removeEventListener("abort", onAbort);
      },
    };
  }

  private async readBody(response: Response, type: "json" | "text"): Promise<unknown> {
    const text = await response.text();
    if (type === "text") return text;
    if (text.trim() === "") return undefined;
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new MnemoError({
        status: response.status,
        code: "invalid_response",
        message: `the server answered ${response.status} with a body that is not JSON`,
        cause,
      });
    }
  }

  private async errorFrom(
    response: Response,
    context: { requestId: string; endpoint: string; attempts: number; retryAfterMs: number | undefined },
  ): Promise<MnemoError> {
    let text = "";
    try {
      text = await response.text();
    } catch {
      // the body could not be read: keep the status alone
    }
    let code = `http_${response.status}`;
    let message = response.statusText || `HTTP ${response.status}`;
    try {
      const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
      if (typeof parsed.error?.code === "string") code = parsed.error.code;
      if (typeof parsed.error?.message === "string") message = parsed.error.message;
    } catch {
      if (text.trim()) message = text.trim().slice(0, 500);
    }
    return errorForStatus({ status: response.status, code, message, ...context });
  }
}
