"""A small HTTP proxy in front of the test server that fails on cue."""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional
from urllib.parse import urlsplit

from .conftest import free_port

# What the proxy does with the n-th request (then it forwards):
FAIL = "fail"  # answer 503 without forwarding
FORWARD_THEN_FAIL = "forward_then_fail"  # forward, drop the real answer, answer 503: a lost response
FORWARD = "forward"


def rate_limit(seconds: int) -> str:
    """Answer 429 with ``Retry-After: seconds`` without forwarding."""
    return f"429:{seconds}"


@dataclass
class Seen:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)


@dataclass
class FaultProxy:
    upstream: str
    script: List[str] = field(default_factory=list)
    seen: List[Seen] = field(default_factory=list)
    forwarded: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> "FaultProxy":
        proxy = self
        upstream = urlsplit(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.seen.append(Seen(self.command, self.path, dict(self.headers), body))
                    n = len(proxy.seen) - 1
                    action = proxy.script[n] if n < len(proxy.script) else FORWARD
                if action.startswith("429:"):
                    return self._reply(429, {"error": {"code": "rate_limited", "message": "slow down"}},
                                       {"Retry-After": action[4:]})
                if action == FAIL:
                    return self._reply(503, {"error": {"code": "unavailable", "message": "injected by the test proxy"}})
                conn = http.client.HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                with proxy._lock:
                    proxy.forwarded += 1
                if action == FORWARD_THEN_FAIL:
                    conn.close()
                    return self._reply(503, {"error": {"code": "unavailable", "message": "response lost by the test proxy"}})
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            def _reply(self, status: int, body: object, headers: Optional[Dict[str, str]] = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        upstream_port = upstream.port or 80
        self._server = ThreadingHTTPServer(("127.0.0.1", free_port(exclude=[upstream_port])), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
