/**
 * agentTurn: one turn of an agent with long-term memory, with any
 * OpenAI-compatible chat completions endpoint (OpenAI, Azure's /v1, vLLM,
 * Ollama, DeepSeek, …).
 *
 * 1. asks mnemo for the memory block of the conversation (`context`),
 * 2. injects it as a system message (after the leading system messages),
 * 3. calls `{baseUrl}/chat/completions` with fetch,
 * 4. records the user's turn and the model's reply in mnemo (`postMessages`,
 *    with message ids, so a retried post is stored once).
 */
import type { CallOptions, MnemoClient } from "./client.js";
import { MnemoValidationError } from "./errors.js";
import type { ContextRequest, ContextResponse, MessageInput, MessagesAccepted } from "./types.js";
import { randomId } from "./uuid.js";

/** A content part of an OpenAI-style message; only `text` parts are read. */
export interface ChatContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** An OpenAI-style chat message. */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool" | (string & {});
  content: string | ChatContentPart[] | null;
  name?: string;
  [key: string]: unknown;
}

export interface LlmOptions {
  /**
   * The OpenAI-compatible API base, up to and including its version, e.g.
   * `https://api.openai.com/v1` or `http://localhost:11434/v1`; the turn
   * posts to `{baseUrl}/chat/completions`.
   */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer …` when given. */
  apiKey?: string;
  /** Extra fields of the completion request (temperature, max_tokens, …). */
  params?: Record<string, unknown>;
  /** Extra headers (e.g. `api-key` for Azure). */
  headers?: Record<string, string>;
  /** The fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Time limit of the completion call (default 120000 ms; 0 for none). */
  timeoutMs?: number;
}

export interface AgentTurnOptions {
  mnemo: MnemoClient;
  /** The subject (the end user) the conversation is with. */
  subject: string;
  /** The conversation so far, oldest first, ending with the user's new turn. */
  messages: ChatMessage[];
  llm: LlmOptions;
  /** Session id recorded with the posted messages. */
  session?: string;
  /** Agent id recorded with the posted messages. */
  agent?: string;
  /** Options of the context request (token budget, filters, …). */
  context?: Omit<ContextRequest, "messages">;
  /** Whether to record the turn in mnemo (default true). */
  record?: boolean;
  signal?: AbortSignal;
}

export interface AgentTurnResult {
  /** The model's reply (the first choice's content; "" when it had none). */
  reply: string;
  /** The memory block mnemo gave for this turn ("" when nothing was relevant). */
  block: string;
  /** mnemo's full context answer; `null` when the conversation had nothing to query with. */
  context: ContextResponse | null;
  /** The messages sent to the model, the memory block included. */
  sent: ChatMessage[];
  /** The completion response as the endpoint returned it. */
  completion: ChatCompletion;
  /** mnemo's answer to recording the turn; `null` when `record` was false. */
  recorded: MessagesAccepted | null;
}

export interface ChatCompletion {
  choices?: { message?: { role?: string; content?: string | ChatContentPart[] | null } }[];
  [key: string]: unknown;
}

/** The chat endpoint answered with an error, or with something that is not a completion. */
export class LlmError extends Error {
  readonly status: number;
  readonly body: string;
  constructor(message: string, status: number, body: string) {
    super(message);
    this.name = "LlmError";
    this.status = status;
    this.body = body;
  }
}

/** The text of a message's content (text parts joined by newlines). */
export function contentText(content: ChatMessage["content"] | undefined): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

/** Introduces mnemo's block in the injected system message. */
const SYSTEM_PREAMBLE =
  "What you remember about the user from earlier conversations (use it when relevant; do not mention this list):";

export async function agentTurn(options: AgentTurnOptions): Promise<AgentTurnResult> {
  const { mnemo, subject, messages, llm, signal } = options;
  const call: CallOptions = signal ? { signal } : {};

  // 1. The memory block for the end of the conversation.
  const contextMessages = messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, content: contentText(m.content) }))
    .filter((m) => m.content.trim() !== "")
    // The query is made of the last `last_n` (at most 50) turns: send no more than that.
    .slice(-50);
  let context: ContextResponse | null = null;
  if (contextMessages.length > 0) {
    try {
      context = await mnemo.context(subject, { ...(options.context ?? {}), messages: contextMessages }, call);
    } catch (error) {
      // Nothing to query with (e.g. only blank turns): answer without memories.
      if (!(error instanceof MnemoValidationError && error.code === "no_query")) throw error;
    }
  }
  const block = context?.block ?? "";

  // 2. Inject it after the leading system messages.
  const sent = [...messages];
  if (block.trim() !== "") {
    let at = 0;
    while (at < sent.length && (sent[at]!.role === "system" || sent[at]!.role === "developer")) at++;
    sent.splice(at, 0, { role: "system", content: `${SYSTEM_PREAMBLE}\n${block}` });
  }

  // 3. The completion.
  const completion = await chatCompletion(llm, sent, signal);
  const reply = contentText(completion.choices?.[0]?.message?.content ?? null);

  // 4. Record the user's new turn (the user messages after the last
  //    assistant message) and the reply.
  let recorded: MessagesAccepted | null = null;
  if (options.record !== false) {
    let start = messages.length;
    while (start > 0 && messages[start - 1]!.role !== "assistant") start--;
    const turn: MessageInput[] = [];
    const now = new Date().toISOString();
    const extra = {
      ...(options.session !== undefined ? { session: options.session } : {}),
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
    };
    for (const m of messages.slice(start)) {
      const text = contentText(m.content);
      if (m.role === "user" && text.trim() !== "") {
        turn.push({ id: randomId(), role: "user", content: text, timestamp: now, ...extra });
      }
    }
    if (reply.trim() !== "") {
      turn.push({ id: randomId(), role: "assistant", content: reply, timestamp: new Date().toISOString(), ...extra });
    }
    if (turn.length > 0) recorded = await mnemo.postMessages(subject, turn, call);
  }

  return { reply, block, context, sent, completion, recorded };
}

async function chatCompletion(llm: LlmOptions, messages: ChatMessage[], signal?: AbortSignal): Promise<ChatCompletion> {
  const f = llm.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json",
    ...(llm.apiKey ? { Authorization: `Bearer ${llm.apiKey}` } : {}),
    ...(llm.headers ?? {}),
  };
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  const timeoutMs = llm.timeoutMs ?? 120_000;
  const timer = timeoutMs > 0 ? setTimeout(() => controller.abort(new Error("chat completion timed out")), timeoutMs) : undefined;
  const url = `${llm.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  try {
    const response = await f(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ ...(llm.params ?? {}), model: llm.model, messages }),
      signal: controller.signal,
    });
    const text = await response.text();
    if (!response.ok) {
      throw new LlmError(`${url} answered ${response.status}: ${text.slice(0, 300)}`, response.status, text);
    }
    try {
      return JSON.parse(text) as ChatCompletion;
    } catch {
      throw new LlmError(`${url} answered with a body that is not JSON`, response.status, text);
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
