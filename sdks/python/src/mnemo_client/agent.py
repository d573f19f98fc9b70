"""One agent turn with long-term memory, around any OpenAI-compatible model.

:func:`agent_turn` (and :func:`async_agent_turn`):

1. asks mnemo for the memory block of the conversation (``context``);
2. puts the block in a system message, after the caller's own system
   messages, so the model sees what it knows about the user;
3. calls ``{llm_base_url}/chat/completions`` (plain HTTP, no SDK needed;
   ``llm_base_url`` as OpenAI clients take it, e.g. ``https://api.openai.com/v1``
   or ``http://localhost:11434/v1``);
4. records the user's turn and the reply as messages of the subject, so mnemo
   can consolidate them into memories.

The conversation passed in is not modified.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import httpx

from . import models as m
from ._ops import _text
from .async_client import AsyncMnemoClient
from .client import MnemoClient
from .errors import MnemoError, Unprocessable

ChatMessage = Mapping[str, Any]


@dataclass
class TurnResult:
    """What one turn did."""

    reply: str
    """The assistant's answer."""
    context: Optional[m.ContextResponse]
    """mnemo's answer to the context request (``None`` when the conversation
    had nothing to build a query from)."""
    prompt: List[Dict[str, Any]]
    """The messages sent to the model, memory block included."""
    posted: Optional[m.MessagesAccepted]
    """mnemo's answer to recording the turn."""
    completion: Dict[str, Any] = field(default_factory=dict)
    """The model's raw response."""


def _llm_settings(
    llm_base_url: Optional[str], model: Optional[str], api_key: Optional[str]
) -> "tuple[str, str, Optional[str]]":
    base = llm_base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    chosen = model or os.environ.get("OPENAI_MODEL")
    if not chosen:
        raise ValueError("no model: pass model= or set OPENAI_MODEL")
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    return base.rstrip("/"), chosen, key


def inject_memory(messages: Sequence[ChatMessage], block: str) -> List[Dict[str, Any]]:
    """The conversation with the memory block as a system message placed right
    after the leading system messages (the app's own instructions stay first)."""
    out = [dict(msg) for msg in messages]
    if not block:
        return out
    at = 0
    while at < len(out) and out[at].get("role") in ("system", "developer"):
        at += 1
    out.insert(at, {"role": "system", "content": block})
    return out


def _last_user(messages: Sequence[ChatMessage]) -> Optional[ChatMessage]:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message
    return None


def _turn_messages(
    user: Optional[ChatMessage], reply: str, session: Optional[str], agent: Optional[str]
) -> List[m.MessageInput]:
    turn = []
    if user is not None and _text(user.get("content")).strip():
        turn.append(m.MessageInput(role="user", content=_text(user.get("content")), id=str(uuid.uuid4())))
    if reply.strip():
        turn.append(m.MessageInput(role="assistant", content=reply, id=str(uuid.uuid4())))
    return [msg.model_copy(update={"session": session, "agent": agent}) for msg in turn]


def _completion_body(model: str, prompt: List[Dict[str, Any]], extra: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    return {**(extra or {}), "model": model, "messages": prompt}


def _reply(completion: Dict[str, Any]) -> str:
    try:
        return _text(completion["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError) as exc:
        raise MnemoError(f"unexpected chat completion: {completion!r:.500}") from exc


def _headers(api_key: Optional[str]) -> Dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def agent_turn(
    mnemo: MnemoClient,
    subject: str,
    messages: Sequence[ChatMessage],
    *,
    llm_base_url: Optional[str] = None,
    model: Optional[str] = None,
    api_key: Optional[str] = None,
    session: Optional[str] = None,
    agent: Optional[str] = None,
    context_options: Optional[Mapping[str, Any]] = None,
    completion_options: Optional[Mapping[str, Any]] = None,
    http_client: Optional[httpx.Client] = None,
    timeout: float = 120.0,
) -> TurnResult:
    """Run one turn: memory in, model call, turn recorded. ``messages`` is the
    conversation so far, OpenAI-style, ending with the user's new message.
    The model defaults to ``$OPENAI_BASE_URL``, ``$OPENAI_MODEL`` and
    ``$OPENAI_API_KEY``."""
    base, chosen, key = _llm_settings(llm_base_url, model, api_key)
    context: Optional[m.ContextResponse] = None
    try:
        context = mnemo.context(subject, messages, **dict(context_options or {}))
    except Unprocessable as exc:
        # Nothing to build a query from (e.g. only system messages): no memory.
        if exc.code != "no_query":
            raise
    prompt = inject_memory(messages, context.block if context else "")

    http = http_client or httpx.Client(timeout=timeout)
    try:
        response = http.post(
            f"{base}/chat/completions", json=_completion_body(chosen, prompt, completion_options), headers=_headers(key)
        )
        response.raise_for_status()
        completion = response.json()
    finally:
        if http_client is None:
            http.close()
    reply = _reply(completion)

    turn = _turn_messages(_last_user(messages), reply, session, agent)
    posted = mnemo.post_messages(subject, turn) if turn else None
    return TurnResult(reply=reply, context=context, prompt=prompt, posted=posted, completion=completion)


async def async_agent_turn(
    mnemo: AsyncMnemoClient,
    subject: str,
    messages: Sequence[ChatMessage],
    *,
    llm_base_url: Optional[str] = None,
    model: Optional[str] = None,
    api_key: Optional[str] = None,
    session: Optional[str] = None,
    agent: Optional[str] = None,
    context_options: Optional[Mapping[str, Any]] = None,
    completion_options: Optional[Mapping[str, Any]] = None,
    http_client: Optional[httpx.AsyncClient] = None,
    timeout: float = 120.0,
) -> TurnResult:
    """:func:`agent_turn` for the async client."""
    base, chosen, key = _llm_settings(llm_base_url, model, api_key)
    context: Optional[m.ContextResponse] = None
    try:
        context = await mnemo.context(subject, messages, **dict(context_options or {}))
    except Unprocessable as exc:
        if exc.code != "no_query":
            raise
    prompt = inject_memory(messages, context.block if context else "")

    http = http_client or httpx.AsyncClient(timeout=timeout)
    try:
        response = await http.post(
            f"{base}/chat/completions", json=_completion_body(chosen, prompt, completion_options), headers=_headers(key)
        )
        response.raise_for_status()
        completion = response.json()
    finally:
        if http_client is None:
            await http.aclose()
    reply = _reply(completion)

    turn = _turn_messages(_last_user(messages), reply, session, agent)
    posted = await mnemo.post_messages(subject, turn) if turn else None
    return TurnResult(reply=reply, context=context, prompt=prompt, posted=posted, completion=completion)


__all__ = ["agent_turn", "async_agent_turn", "inject_memory", "TurnResult"]
