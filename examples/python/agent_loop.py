#!/usr/bin/env python3
"""A chat loop with long-term memory: mnemo + any OpenAI-compatible model.

Each line you type is one turn: mnemo's memory block for the conversation is
put in the prompt, the model answers, and the turn is recorded in mnemo (which
consolidates it into memories). On exit (EOF or an empty line) the session is
consolidated at once.

Environment:
  MNEMO_URL        mnemo server (default http://127.0.0.1:8080)
  MNEMO_TOKEN      a token with memories:read and memories:write
                   (`mnemo token --tenant acme --scope all`)
  MNEMO_SUBJECT    whom the agent talks to (default user-42)
  OPENAI_BASE_URL  the model server, as OpenAI clients take it
                   (e.g. https://api.openai.com/v1, http://localhost:11434/v1)
  OPENAI_MODEL     the model (e.g. gpt-4o-mini, qwen2.5:7b)
  OPENAI_API_KEY   if the model server wants one

Usage:
  python agent_loop.py                  # interactive
  printf 'hi\\nI love green tea\\n' | python agent_loop.py
"""

from __future__ import annotations

import os
import sys
import uuid

from mnemo_client import MnemoClient
from mnemo_client.agent import agent_turn

SYSTEM_PROMPT = "You are a helpful assistant with a long-term memory of the user. Be brief."


def main() -> int:
    subject = os.environ.get("MNEMO_SUBJECT", "user-42")
    session = f"chat-{uuid.uuid4().hex[:12]}"
    conversation = [{"role": "system", "content": SYSTEM_PROMPT}]
    interactive = sys.stdin.isatty()
    with MnemoClient() as mnemo:
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                break
            conversation.append({"role": "user", "content": line.strip()})
            turn = agent_turn(mnemo, subject, conversation, session=session, agent="agent-loop")
            conversation.append({"role": "assistant", "content": turn.reply})
            recalled = len(turn.context.memories) if turn.context else 0
            print(f"assistant> {turn.reply}")
            print(f"  (memories in the prompt: {recalled})", file=sys.stderr)
        if len(conversation) > 1:
            # Whatever of the subject still waits is due anyway; asking for all
            # of it keeps one request per chat.
            mnemo.consolidate(subject)
            print(f"session {session} recorded; consolidation requested", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
