"""A real ``mnemo serve`` for the whole session, and per-test tenants.

The server binary is ``$MNEMO_BIN`` (default: the debug build of the main
worktree's target dir). It runs with the lexical embedder on a temporary
data dir and a port in 18080-18099 (``$MNEMO_TEST_PORT`` to pin one), and is
stopped at the end of the session. Each test gets its own tenant, so tests
never see each other's data.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple, TypeVar

import httpx
import pytest

from mnemo_client import AsyncMnemoClient, MnemoClient, RetryPolicy

DEFAULT_BIN = "/var/tmp/mnemo-main-target/debug/mnemo"
PORT_RANGE = range(18080, 18100)
T = TypeVar("T")


def free_port(exclude: Sequence[int] = ()) -> int:
    """A free loopback port in the range this suite may use."""
    for port in PORT_RANGE:
        if port in exclude:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE.start}-{PORT_RANGE.stop - 1}")


def eventually(probe: Callable[[], Optional[T]], *, timeout: float = 30.0, interval: float = 0.2, what: str = "") -> T:
    """Poll ``probe`` until it returns something truthy: lists, search and the
    consolidator trail writes (the projections are asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}")
        time.sleep(interval)


async def aeventually(probe: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.2, what: str = "") -> Any:
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}")
        await asyncio.sleep(interval)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass
class Server:
    binary: str
    data_dir: Path
    url: str
    _tokens: Dict[Tuple[Any, ...], str] = field(default_factory=dict)

    def token(
        self,
        tenant: str,
        *,
        scopes: Sequence[str] = ("all",),
        subject: Optional[str] = None,
        actor: str = "sdk-test",
    ) -> str:
        key = (tenant, tuple(scopes), subject, actor)
        if key not in self._tokens:
            cmd = [self.binary, "token", "--data-dir", str(self.data_dir), "--tenant", tenant, "--actor", actor]
            if subject:
                cmd += ["--subject", subject]
            cmd += ["--scope", *scopes]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
            self._tokens[key] = out.stdout.strip()
        return self._tokens[key]

    def client(self, tenant: str, *, url: Optional[str] = None, **kwargs: Any) -> MnemoClient:
        token_args = {k: kwargs.pop(k) for k in ("scopes", "subject") if k in kwargs}
        kwargs.setdefault("retry", RetryPolicy(max_retries=3, backoff_base=0.05))
        return MnemoClient(url or self.url, self.token(tenant, **token_args), **kwargs)

    def async_client(self, tenant: str, *, url: Optional[str] = None, **kwargs: Any) -> AsyncMnemoClient:
        token_args = {k: kwargs.pop(k) for k in ("scopes", "subject") if k in kwargs}
        kwargs.setdefault("retry", RetryPolicy(max_retries=3, backoff_base=0.05))
        return AsyncMnemoClient(url or self.url, self.token(tenant, **token_args), **kwargs)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    binary = os.environ.get("MNEMO_BIN", DEFAULT_BIN)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        pytest.fail(f"mnemo binary not found at {binary} (set MNEMO_BIN)", pytrace=False)
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-sdk-py-"))
    port = int(os.environ["MNEMO_TEST_PORT"]) if os.environ.get("MNEMO_TEST_PORT") else free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MNEMO_EMBEDDER": "lexical"}
    log = open(data_dir / "server.log", "wb")
    process = subprocess.Popen(
        [binary, "serve", "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{port}"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"mnemo serve exited with {process.returncode}: {(data_dir / 'server.log').read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"mnemo serve not ready: {(data_dir / 'server.log').read_text()[-4000:]}")
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
def tenant() -> str:
    return unique("t")


@pytest.fixture
def subject() -> str:
    return unique("user")


@pytest.fixture
def client(server: Server, tenant: str) -> Iterator[MnemoClient]:
    with server.client(tenant) as c:
        yield c


@pytest.fixture
async def aclient(server: Server, tenant: str) -> Any:
    async with server.async_client(tenant) as c:
        yield c
