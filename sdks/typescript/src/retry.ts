/**
 * Retries with exponential backoff and jitter.
 *
 * A call is retried on 429 (honouring `Retry-After`), on 5xx answers (but
 * 501 and 507, which a retry does not mend: 507 `insufficient_storage` waits
 * for an operator to free disk) and on network errors (no response, a reset connection, an attempt timeout), at
 * most `maxRetries` times. Calls that could record something twice when
 * re-sent (creating a memory, starting an erasure, a correction without an
 * expected version) are retried on 429 only: a rate-limited request was not
 * processed.
 */

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 disables retries). */
  maxRetries?: number;
  /** Delay before the first retry, doubled on each further one (default 250 ms). */
  baseDelayMs?: number;
  /** Upper bound of a computed backoff delay (default 8000 ms). */
  maxDelayMs?: number;
  /**
   * The longest `Retry-After` the client waits for (default 60000 ms). A
   * server asking for longer gets the error thrown at once instead.
   */
  maxRetryAfterMs?: number;
  /** Statuses that are retried besides 429 (default: every 5xx but 501 and 507). */
  retryStatuses?: (status: number) => boolean;
}

export interface ResolvedRetryOptions {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  maxRetryAfterMs: number;
  retryStatuses: (status: number) => boolean;
}

export function resolveRetryOptions(options: RetryOptions | false | undefined): ResolvedRetryOptions {
  const o = options === false ? { maxRetries: 0 } : (options ?? {});
  const maxRetries = o.maxRetries ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new RangeError(`retry.maxRetries must be a non-negative integer, got ${String(maxRetries)}`);
  }
  return {
    maxRetries,
    baseDelayMs: Math.max(0, o.baseDelayMs ?? 250),
    maxDelayMs: Math.max(0, o.maxDelayMs ?? 8000),
    maxRetryAfterMs: Math.max(0, o.maxRetryAfterMs ?? 60_000),
    retryStatuses: o.retryStatuses ?? ((status) => status >= 500 && status <= 599 && status !== 501 && status !== 507),
  };
}

/**
 * The backoff before retry number `retry` (0 for the first retry): an
 * exponential delay with "equal jitter", i.e. uniformly between half of
 * min(maxDelay, base * 2^retry) and all of it, so that clients failing
 * together do not retry together.
 */
export function backoffDelay(retry: number, options: ResolvedRetryOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Parses a `Retry-After` header (delay-seconds or an HTTP-date) into
 * milliseconds from `now`; undefined when absent or unparsable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
