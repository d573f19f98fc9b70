"""A real ``mnemo serve`` for the session, and MCP clients of it.

The server is ``$MNEMO_BIN`` with the lexical embedder on a temporary data
dir and a port in 18200-18219 (``$MNEMO_TEST_PORT`` pins one). Tokens are
minted by ``mnemo token`` for that data dir, as a user would. Each test gets
its own tenant and subject, so tests never see each other's data.

Every tool test runs twice, through the official SDK's two transports:
``stdio`` starts ``mnemo mcp`` with ``MNEMO_URL``/``MNEMO_TOKEN``; ``http``
posts to the server's ``/mcp`` with the token as a bearer header.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Iterator, Optional, Sequence, Tuple, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

DEFAULT_BIN = "/var/tmp/mnemo-mcp-target/debug/mnemo"
PORT_RANGE = range(18200, 18220)
TRANSPORTS = ("stdio", "http")
T = TypeVar("T")


def free_port() -> int:
    for port in PORT_RANGE:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE.start}-{PORT_RANGE.stop - 1}")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass
class Server:
    binary: str
    data_dir: Path
    url: str
    _tokens: Dict[Tuple[Any, ...], str] = field(default_factory=dict)

    def token(self, tenant: str, *, scopes: Sequence[str] = ("all",), subject: Optional[str] = None) -> str:
        key = (tenant, tuple(scopes), subject)
        if key not in self._tokens:
            cmd = [self.binary, "token", "--data-dir", str(self.data_dir), "--tenant", tenant, "--actor", "mcp-test"]
            if subject:
                cmd += ["--subject", subject]
            cmd += ["--scope", *scopes]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
            self._tokens[key] = out.stdout.strip()
        return self._tokens[key]

    def rest(self, token: str, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None) -> httpx2.Response:
        """The REST API directly, for what no tool does (consolidate, revise)
        and to check what a tool did."""
        all_headers = {"Authorization": f"Bearer {token}", **(headers or {})}
        with httpx2.Client(base_url=self.url, timeout=30) as http:
            return http.request(method, path, json=body, headers=all_headers)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    binary = os.environ.get("MNEMO_BIN", DEFAULT_BIN)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        pytest.fail(f"mnemo binary not found at {binary} (set MNEMO_BIN)", pytrace=False)
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-mcp-"))
    port = int(os.environ["MNEMO_TEST_PORT"]) if os.environ.get("MNEMO_TEST_PORT") else free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = data_dir / "server.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [binary, "serve", "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{port}"],
        env={**os.environ, "MNEMO_EMBEDDER": "lexical"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"mnemo serve exited with {process.returncode}: {log_path.read_text()[-4000:]}")
            try:
                if httpx2.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"mnemo serve not ready: {log_path.read_text()[-4000:]}")
            time.sleep(0.2)
        yield Server(binary=binary, data_dir=data_dir, url=url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        if os.environ.get("MNEMO_KEEP_DATA"):
            print(f"mnemo data dir kept: {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tenant() -> str:
    return unique("t")


@pytest.fixture
def subject() -> str:
    return unique("user")


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@asynccontextmanager
async def connect(server: Server, token: str, transport: str) -> AsyncIterator[Client]:
    """An initialized MCP client of mnemo, acting with ``token``."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=server.binary,
            args=["mcp"],
            env={"MNEMO_URL": server.url, "MNEMO_TOKEN": token},
        )
        async with Client(params) as client:
            yield client
    elif transport == "http":
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
                yield client
    else:
        raise ValueError(transport)


def structured(result: CallToolResult) -> Dict[str, Any]:
    """A successful tool result's structured content."""
    assert not result.is_error, f"tool error: {text_of(result)}"
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def error_of(result: CallToolResult) -> Dict[str, Any]:
    """A tool error's ``{"error": {"code", "message"}, "status"}``."""
    assert result.is_error, f"expected a tool error, got {text_of(result)}"
    content = result.structured_content
    assert isinstance(content, dict) and isinstance(content.get("error"), dict), result
    # The text a model reads says the same.
    assert json.loads(text_of(result)) == content
    return content


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def eventually(probe: Callable[[], Awaitable[Optional[T]]], *, timeout: float = 60.0, what: str = "") -> T:
    """Polls ``probe`` until it returns something truthy: search, lists and
    the consolidator trail writes (projections are asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}")
        await anyio.sleep(0.25)
