"""Exceptions raised by the client.

Every error the server answers carries a stable ``code`` (e.g.
``memory_not_found``, ``version_conflict``) in the body
``{"error": {"code": ..., "message": ...}}``; the exception class is chosen by
HTTP status (and, for a few codes, by the code), so callers can catch as
broadly or as narrowly as they need::

    try:
        client.get_memory(memory_id)
    except NotFound:
        ...
    except MnemoError as e:
        log.warning("mnemo said %s (%s)", e.code, e.status)
"""

from __future__ import annotations

import json
from typing import Dict, Mapping, Optional, Type

import httpx


class MnemoError(Exception):
    """Base of every error raised by the client.

    ``status`` is the HTTP status (``None`` when no response was received),
    ``code`` the server's stable error code (``None`` when the body carried
    none, e.g. the bare 431/400/408 the HTTP layer answers before mnemo's code
    runs), ``message`` the server's explanation.
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.headers: Dict[str, str] = dict(headers or {})
        self.request_id = request_id

    def __str__(self) -> str:
        parts = [p for p in (str(self.status) if self.status else None, self.code) if p]
        prefix = " ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r})"
        )


class TransportError(MnemoError):
    """No usable response: the connection failed or timed out (after retries)."""


class ValidationError(MnemoError):
    """The request was refused as invalid (400, 413, 415, 422)."""


class BadRequest(ValidationError):
    """400: malformed JSON, a body or query that does not match the schema, a bad id."""


class PayloadTooLarge(ValidationError):
    """413: the body is over the server's limit."""


class UnsupportedMediaType(ValidationError):
    """415: the body was not sent as JSON."""


class Unprocessable(ValidationError):
    """422: well-formed but semantically invalid input."""


class AuthError(MnemoError):
    """401 or 403."""


class Unauthorized(AuthError):
    """401: the bearer token is missing or invalid."""


class Forbidden(AuthError):
    """403: missing scope (``insufficient_scope``) or another subject than the
    token is bound to (``subject_forbidden``)."""


class NotFound(MnemoError):
    """404: no such resource in the token's tenant (or no such route)."""


class MethodNotAllowed(MnemoError):
    """405."""


class Conflict(MnemoError):
    """409: conflict with the current state."""


class VersionConflict(Conflict):
    """409 ``version_conflict``: the memory moved on; read it again and retry."""


class Gone(MnemoError):
    """410 ``subject_erased``: the subject was erased; final."""


class RateLimited(MnemoError):
    """429. ``retry_after`` is the server's ``Retry-After`` in seconds, if sent."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.retry_after = retry_after


class ServerError(MnemoError):
    """5xx."""


class Unavailable(ServerError):
    """503: a backing store is unavailable (or ``not_ready``); retry later."""


_BY_STATUS: Dict[int, Type[MnemoError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
    429: RateLimited,
    503: Unavailable,
}

_BY_CODE: Dict[str, Type[MnemoError]] = {
    "version_conflict": VersionConflict,
}


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime
    from datetime import datetime, timezone

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def error_from_response(response: httpx.Response, request_id: Optional[str] = None) -> MnemoError:
    """The exception for an error response."""
    code: Optional[str] = None
    message = response.reason_phrase or f"HTTP {response.status_code}"
    try:
        body = json.loads(response.content) if response.content else None
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        message = body["error"].get("message") or message
    status = response.status_code
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else MnemoError
    kwargs = dict(status=status, code=code, headers=response.headers, request_id=request_id)
    if cls is RateLimited:
        return RateLimited(
            message, retry_after=parse_retry_after(response.headers.get("retry-after")), **kwargs
        )
    return cls(message, **kwargs)  # type: ignore[arg-type]


__all__ = [
    "MnemoError",
    "TransportError",
    "ValidationError",
    "BadRequest",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "Unprocessable",
    "AuthError",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "VersionConflict",
    "Gone",
    "RateLimited",
    "ServerError",
    "Unavailable",
    "error_from_response",
    "parse_retry_after",
]
