#!/usr/bin/env python3
"""An MCP client session with mnemo, through the official Python MCP SDK
(`pip install mcp`): list the tools, remember a short conversation, then
recall from it and get the context block for the next answer, as an agent
would between two turns.

By default it talks to the server's MCP endpoint (`POST $MNEMO_URL/mcp`);
with --stdio it starts `mnemo mcp` instead and talks to it over stdin and
stdout, as Claude Desktop or Cursor do.

Environment:
  MNEMO_URL    mnemo server (default http://127.0.0.1:8080)
  MNEMO_TOKEN  a token with memories:read and memories:write, e.g.
               $(mnemo token --tenant acme --scope memories:read memories:write)
  MNEMO_BIN    the mnemo command for --stdio (default: mnemo on the PATH)

Usage:
  python session.py [--subject user-42] [--stdio]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Dict

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(url: str, token: str, stdio: bool) -> AsyncIterator[Client]:
    if stdio:
        server = StdioServerParameters(
            command=os.environ.get("MNEMO_BIN", "mnemo"),
            args=["mcp"],
            env={"MNEMO_URL": url, "MNEMO_TOKEN": token},
        )
        async with Client(server) as client:
            yield client
    else:
        # The bearer token is the mnemo token: the tools act with its tenant,
        # subject and scopes.
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http)) as client:
                yield client


async def call(client: Client, tool: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
    """A tool's structured result; a refusal by mnemo (a tool error with the
    API's error code) stops the session."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.structured_content or result.content}")
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def session(url: str, token: str, subject: str, stdio: bool) -> None:
    async with connect(url, token, stdio) as client:
        tools = (await client.list_tools()).tools
        print(f"{len(tools)} tools:")
        for tool in tools:
            print(f"  {tool.name}: {(tool.description or '').split('. ')[0]}.")

        conversation = f"trip-{uuid.uuid4().hex[:8]}"
        turns = [
            {"role": "user", "content": "I'm planning a trip to Kyoto in April.", "session": conversation},
            {"role": "assistant", "content": "Lovely, cherry blossom season! Any preferences?", "session": conversation},
            {"role": "user", "content": "I'm vegetarian and I love quiet temples.", "session": conversation},
        ]
        recorded = await call(client, "remember", {"subject": subject, "messages": turns})
        print(f"\nremembered {recorded['accepted']} messages of {subject} (ids {[e['id'] for e in recorded['events']]})")

        # Every message is searchable once the server has indexed it (moments).
        for _ in range(100):
            found = await call(client, "recall", {"subject": subject, "query": "what does the user eat?", "k": 3})
            if found["results"]:
                break
            await asyncio.sleep(0.2)
        print("\nrecall 'what does the user eat?':")
        for result in found["results"]:
            item = result.get("memory") or result.get("episode") or {}
            print(f"  [{result['type']}] {item.get('content')}  (score {result['score']:.2f})")
        if not found["results"]:
            raise SystemExit("recall found nothing")

        context = await call(
            client,
            "get_context",
            {"subject": subject, "messages": [{"role": "user", "content": "Where should I eat in Kyoto?"}], "token_budget": 300},
        )
        print(f"\ncontext block for the next answer ({context['tokens']} tokens):\n{context['block']}")


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subject", default=f"user-{uuid.uuid4().hex[:8]}")
    parser.add_argument("--stdio", action="store_true", help="start `mnemo mcp` instead of using the HTTP endpoint")
    args = parser.parse_args(argv)
    token = os.environ.get("MNEMO_TOKEN")
    if not token:
        print("set MNEMO_TOKEN to a mnemo token (mnemo token --tenant acme --scope memories:read memories:write)", file=sys.stderr)
        return 2
    url = os.environ.get("MNEMO_URL", "http://127.0.0.1:8080")
    asyncio.run(session(url, token, args.subject, args.stdio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
