/**
 * Errors thrown by the client. Every failed call throws a {@link MnemoError}
 * (or a subclass), carrying the HTTP status and the stable `code` of mnemo's
 * JSON error body `{"error": {"code": "...", "message": "..."}}`.
 */

export interface MnemoErrorInit {
  /** HTTP status; 0 when no response was received (see {@link MnemoConnectionError}). */
  status: number;
  /** Stable machine-readable code, e.g. `invalid_id`, `version_conflict`, `insufficient_scope`. */
  code: string;
  message: string;
  /** The `X-Request-Id` the client sent with the call (the same on every attempt). */
  requestId?: string | undefined;
  /** The method and path of the call, e.g. `GET /v1/memories/…`. */
  endpoint?: string | undefined;
  /** How many attempts were made, retries included. */
  attempts?: number | undefined;
  /** The `Retry-After` header of the response, in milliseconds, when it had one. */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

export class MnemoError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  readonly endpoint: string | undefined;
  readonly attempts: number;
  readonly retryAfterMs: number | undefined;

  constructor(init: MnemoErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.endpoint = init.endpoint;
    this.attempts = init.attempts ?? 1;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 401 (missing or invalid token) or 403 (`insufficient_scope`, `subject_forbidden`). */
export class MnemoAuthError extends MnemoError {}

/** 404: no such memory, erasure, review or profile in the token's tenant (also another tenant's ids). */
export class MnemoNotFoundError extends MnemoError {}

/** 429: too many requests. `retryAfterMs` holds the server's `Retry-After`, when given. */
export class MnemoRateLimitError extends MnemoError {}

/** 400 (malformed request: `invalid_json`, `invalid_body`, `invalid_id`, …) or 422 (semantically invalid input). */
export class MnemoValidationError extends MnemoError {}

/** 409: `version_conflict`, `memory_deleted`, `review_already_resolved`. */
export class MnemoConflictError extends MnemoError {}

/** 410 `subject_erased`: the subject was erased; the content is gone for good. */
export class MnemoGoneError extends MnemoError {}

/** 5xx: the server failed or a backing store is unavailable. */
export class MnemoServerError extends MnemoError {}

/** No HTTP response: the connection failed, was reset, or the attempt timed out. `status` is 0. */
export class MnemoConnectionError extends MnemoError {}

/** Builds the error for an HTTP status and the server's code and message. */
export function errorForStatus(init: MnemoErrorInit): MnemoError {
  const { status } = init;
  if (status === 401 || status === 403) return new MnemoAuthError(init);
  if (status === 404) return new MnemoNotFoundError(init);
  if (status === 429) return new MnemoRateLimitError(init);
  if (status === 400 || status === 422) return new MnemoValidationError(init);
  if (status === 409) return new MnemoConflictError(init);
  if (status === 410) return new MnemoGoneError(init);
  if (status >= 500) return new MnemoServerError(init);
  return new MnemoError(init);
}
