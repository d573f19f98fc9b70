"""``examples/mcp/session.py`` runs against the test server, over HTTP and
over stdio, and leaves what it says it remembered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TRANSPORTS, Server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp" / "session.py"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_example_session_lists_remembers_and_recalls(server: Server, tenant: str, subject: str, transport: str) -> None:
    token = server.token(tenant, scopes=["memories:read", "memories:write"])
    env = {**os.environ, "MNEMO_URL": server.url, "MNEMO_TOKEN": token, "MNEMO_BIN": server.binary}
    args = [sys.executable, str(EXAMPLE), "--subject", subject] + (["--stdio"] if transport == "stdio" else [])
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    out = run.stdout
    assert "7 tools:" in out, out
    assert f"remembered 3 messages of {subject}" in out, out
    assert "vegetarian" in out.split("recall 'what does the user eat?':")[1], out
    assert "context block for the next answer" in out, out

    # It really went to the server, under the token's tenant.
    export = server.rest(server.token(tenant), "GET", f"/v1/subjects/{subject}/export").json()
    assert len(export["messages"]) == 3
    assert any("Kyoto" in m["content"] for m in export["messages"])


def test_the_example_says_what_is_missing_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MNEMO_TOKEN"}
    run = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "MNEMO_TOKEN" in run.stderr
