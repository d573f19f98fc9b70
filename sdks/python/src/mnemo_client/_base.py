"""What the sync and async clients share: configuration and request headers."""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, Mapping, Optional

from ._ops import Call
from ._retry import RetryPolicy
from ._version import __version__

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0


class ClientBase:
    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        retry: Optional[RetryPolicy] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.base_url = (base_url or os.environ.get("MNEMO_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("MNEMO_TOKEN")
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy(max_retries=max_retries)
        self._extra_headers = dict(headers or {})

    def _request_kwargs(self, call: Call[Any], request_id: str) -> Dict[str, Any]:
        headers = {
            "User-Agent": f"mnemo-client-python/{__version__}",
            "Accept": "application/json",
            # The same id on every attempt, so the events a retried request
            # records can be told apart from those of a second request.
            "X-Request-Id": request_id,
            **self._extra_headers,
            **call.headers,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        kwargs: Dict[str, Any] = {"headers": headers}
        if call.params:
            kwargs["params"] = call.params
        if call.json is not None:
            kwargs["json"] = call.json
        return kwargs

    @staticmethod
    def _new_request_id() -> str:
        return str(uuid.uuid4())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"
