"""The examples in ``examples/python`` run against the test server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mnemo_client import MnemoClient

from .conftest import Server, eventually
from .mock_llm import MockLLM

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


def _run(script: str, args: list, env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=180,
    )


def test_agent_loop(server: Server, tenant: str, subject: str, client: MnemoClient) -> None:
    client.create_memory(subject, "Prefers green tea over coffee", "preference")
    eventually(lambda: client.search(subject, "green tea", include=["memories"]).results, what="searchable memory")
    with MockLLM(reply="Green tea, then.") as llm:
        run = _run(
            "agent_loop.py",
            [],
            {
                "MNEMO_URL": server.url,
                "MNEMO_TOKEN": server.token(tenant),
                "MNEMO_SUBJECT": subject,
                "OPENAI_BASE_URL": llm.base_url,
                "OPENAI_MODEL": "mock",
                "OPENAI_API_KEY": "",
            },
            stdin="Hello!\nWhat should I drink, green tea or coffee?\n",
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("assistant> Green tea, then.") == 2
    assert len(llm.requests) == 2
    second = llm.requests[1]["messages"]
    assert second[0]["content"].startswith("You are a helpful assistant")
    assert any("Prefers green tea over coffee" in m["content"] for m in second if m["role"] == "system")
    assert [m["role"] for m in second[-3:]] == ["user", "assistant", "user"], "the conversation carries over"

    stored = client.export_subject(subject).messages
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Hello!"),
        ("assistant", "Green tea, then."),
        ("user", "What should I drink, green tea or coffee?"),
        ("assistant", "Green tea, then."),
    ]
    assert len({m.session for m in stored}) == 1
    requested = client.list_audit(subject=subject, type="ConsolidationRequested").events
    assert len(requested) == 1
    # The request reached the consolidator, which recorded the chat's batch.
    eventually(
        lambda: client.list_audit(subject=subject, type="BatchConsolidated").events,
        what="the chat's consolidation",
    )


def test_gdpr(server: Server, tenant: str, subject: str, client: MnemoClient, tmp_path: Path) -> None:
    client.post_messages(subject, [{"role": "user", "content": "My dog is called Rex"}])
    memory = client.create_memory(subject, "Has a dog called Rex", "fact")
    out = tmp_path / "export.json"

    run = _run("gdpr.py", [subject, "--out", str(out)], {"MNEMO_URL": server.url, "MNEMO_TOKEN": server.token(tenant)})
    assert run.returncode == 0, run.stderr

    exported = json.loads(out.read_text())
    assert exported["subject"] == subject
    assert [m["content"] for m in exported["messages"]] == ["My dog is called Rex"]
    assert [m["memory"]["id"] for m in exported["memories"]] == [memory.id]

    receipt = json.loads(run.stdout)
    assert receipt["subject"] == subject
    assert receipt["events_shredded"] >= 2
    assert client.get_erasure(receipt["erasure_id"]).status == "completed"
    after = client.export_subject(subject)
    assert after.messages == [] and after.memories == []
