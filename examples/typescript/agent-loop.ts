/**
 * A chat agent with long-term memory: every turn asks mnemo for what it
 * remembers about the user, answers with any OpenAI-compatible model, and
 * records the turn in mnemo. At the end of the session it asks mnemo to
 * consolidate the conversation into memories, so the next session starts
 * with them.
 *
 * Run a local server and mint a token (repository root):
 *
 *   mnemo serve &
 *   export MNEMO_URL=http://127.0.0.1:8080
 *   export MNEMO_TOKEN=$(mnemo token --tenant acme --scope all)
 *
 * then, with any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, …):
 *
 *   export OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b   # OPENAI_API_KEY=sk-… for OpenAI
 *   cd sdks/typescript && npm run example:agent-loop
 *
 * Type a line per turn; an empty line or end of input ends the session.
 * MNEMO_SUBJECT picks the user (default `user-42`), MNEMO_SESSION the
 * session (default: a new one).
 */
import { createInterface } from "node:readline";

import { MnemoClient, agentTurn, type ChatMessage } from "@mnemo/client";

function env(name: string, fallback?: string): string {
  const value = process.env[name] || fallback;
  if (value === undefined) {
    console.error(`set ${name} (see the comment at the top of agent-loop.ts)`);
    process.exit(2);
  }
  return value;
}

const mnemo = new MnemoClient(); // MNEMO_URL and MNEMO_TOKEN
const subject = env("MNEMO_SUBJECT", "user-42");
const session = env("MNEMO_SESSION", `session-${Date.now().toString(36)}`);
const llm = {
  baseUrl: env("OPENAI_BASE_URL", "https://api.openai.com/v1"),
  model: env("OPENAI_MODEL"),
  ...(process.env.OPENAI_API_KEY ? { apiKey: process.env.OPENAI_API_KEY } : {}),
};

const history: ChatMessage[] = [
  { role: "system", content: "You are a friendly assistant. Keep answers short." },
];

const interactive = process.stdin.isTTY === true;
const lines = createInterface({ input: process.stdin, terminal: interactive });
if (interactive) process.stdout.write("you> ");

for await (const line of lines) {
  const text = line.trim();
  if (text === "") break;
  history.push({ role: "user", content: text });
  const turn = await agentTurn({
    mnemo,
    subject,
    messages: [history[0]!, ...history.slice(1).slice(-19)], // the system message and the last turns
    llm,
    session,
    agent: "agent-loop",
    context: { token_budget: 400 },
  });
  const remembered = (turn.context?.memories.length ?? 0) + (turn.context?.episodes.length ?? 0);
  console.log(`assistant> ${turn.reply}`);
  console.log(`  (memory block: ${remembered} item(s), ${turn.context?.tokens ?? 0} tokens; recorded ${turn.recorded?.accepted ?? 0} message(s))`);
  history.push({ role: "assistant", content: turn.reply });
  if (interactive) process.stdout.write("you> ");
}
lines.close();

// End of the session: turn it into memories now rather than after the idle timeout.
if (history.length > 1) {
  const requested = await mnemo.consolidate(subject, { session });
  console.log(`session ${session} ended; consolidation ${requested.status} (${requested.event_id})`);
}
