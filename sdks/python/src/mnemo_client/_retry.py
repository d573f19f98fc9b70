"""When and how long to wait before trying a request again."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import FrozenSet, Optional

import httpx

from .errors import parse_retry_after

# Errors raised before the request could have reached the server: retrying
# them can never duplicate a write, whatever the operation.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter.

    ``max_retries`` attempts are made after the first one. The wait before
    retry ``n`` (0-based) is uniform in ``[0, min(backoff_max, backoff_base * 2**n)]``,
    or the server's ``Retry-After`` when it sent one (capped at
    ``max_retry_after``).

    What is retried depends on the operation:

    * every operation: connection failures before the request was sent, and
      429 (the server refused the request without processing it);
    * idempotent operations only (reads, message posts, which carry ids,
      memory deletes, review decisions, consolidation requests): 5xx answers
      in ``retry_statuses`` and failures after the request was sent (read
      timeouts, dropped connections), since the server may have acted on it.
    """

    max_retries: int = 3
    backoff_base: float = 0.25
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    retry_statuses: FrozenSet[int] = field(default_factory=lambda: frozenset({500, 502, 503, 504}))

    def delay(self, retry: int, retry_after: Optional[float] = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * (2**retry))
        # Full jitter spreads clients that failed together, so they do not
        # come back together.
        return random.uniform(0, ceiling)

    def should_retry_exception(self, exc: Exception, idempotent: bool) -> bool:
        if isinstance(exc, _NOT_SENT):
            return True
        return idempotent and isinstance(exc, httpx.TransportError)

    def should_retry_response(self, response: httpx.Response, idempotent: bool) -> bool:
        if response.status_code == 429:
            return True
        return idempotent and response.status_code in self.retry_statuses

    def retry_after(self, response: httpx.Response) -> Optional[float]:
        return parse_retry_after(response.headers.get("retry-after"))
