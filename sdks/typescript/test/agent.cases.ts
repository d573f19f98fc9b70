/** agentTurn against a mock OpenAI-compatible server and the real mnemo. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { LlmError, agentTurn, type ChatMessage } from "@mnemo/client";

import { eventually, localServer, mnemo, sendJson, subjectId } from "./harness.js";

export interface CompletionRequest {
  path: string;
  authorization: string | undefined;
  body: { model: string; messages: ChatMessage[]; temperature?: number };
}

/** A mock chat-completions endpoint at `{url}/v1/chat/completions` that replies with `reply(n)`. */
export async function mockModel(reply: (n: number, body: CompletionRequest["body"]) => string, status = 200) {
  const requests: CompletionRequest[] = [];
  const server = await localServer((req, res, raw) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      return;
    }
    const body = JSON.parse(raw.toString()) as CompletionRequest["body"];
    requests.push({ path: req.url, authorization: req.headers.authorization, body });
    if (status !== 200) {
      sendJson(res, status, { error: { message: "the model is overloaded", type: "server_error" } });
      return;
    }
    sendJson(res, 200, {
      id: `chatcmpl-${requests.length}`,
      object: "chat.completion",
      model: body.model,
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: reply(requests.length, body) } }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  });
  return { ...server, baseUrl: `${server.url}/v1`, requests };
}

export function agent(): void {
  test("agentTurn injects the memory block as a system message, calls the model and records the turn", async () => {
    const client = await mnemo.client();
    const subject = subjectId("agent");
    const memory = await client.createMemory(subject, { content: "Loves green tea in the morning", kind: "preference" });
    await eventually("the memory to be in the context block", async () => {
      const context = await client.context(subject, { messages: [{ role: "user", content: "green tea" }], include: ["memories"] });
      return context.block.includes("Loves green tea in the morning");
    });

    const model = await mockModel(() => "How about a warm sencha? It is a green tea.");
    try {
      const conversation: ChatMessage[] = [
        { role: "system", content: "You are a helpful barista." },
        { role: "user", content: [{ type: "text", text: "What should I drink this morning? Maybe some tea?" }] },
      ];
      const turn = await agentTurn({
        mnemo: client,
        subject,
        messages: conversation,
        llm: { baseUrl: model.baseUrl, model: "mock-model", apiKey: "sk-test", params: { temperature: 0.2 } },
        session: "morning",
        agent: "barista",
        context: { include: ["memories"], token_budget: 200 },
      });

      assert.equal(model.requests.length, 1);
      const sent = model.requests[0]!;
      assert.equal(sent.authorization, "Bearer sk-test");
      assert.equal(sent.body.model, "mock-model");
      assert.equal(sent.body.temperature, 0.2);
      const messages = sent.body.messages;
      assert.equal(messages.length, 3);
      assert.deepEqual(messages[0], conversation[0], "the caller's system message comes first");
      assert.equal(messages[1]!.role, "system");
      assert.ok(typeof messages[1]!.content === "string" && messages[1]!.content.includes(turn.block));
      assert.match(String(messages[1]!.content), /- \[preference\] Loves green tea in the morning/);
      assert.deepEqual(messages[2], conversation[1], "the user's turn comes last");
      assert.deepEqual(turn.sent, messages);
      assert.equal(conversation.length, 2, "the caller's conversation is not modified");

      assert.equal(turn.reply, "How about a warm sencha? It is a green tea.");
      assert.deepEqual(
        turn.context?.memories.map((r) => r.memory?.id),
        [memory.id],
      );
      assert.equal(turn.recorded?.accepted, 2);

      // The user's turn and the reply are in mnemo, in order, with session and agent.
      const exported = await client.exportSubject(subject);
      assert.deepEqual(
        exported.messages.map((m) => [m.role, m.content, m.session, m.agent]),
        [
          ["user", "What should I drink this morning? Maybe some tea?", "morning", "barista"],
          ["assistant", "How about a warm sencha? It is a green tea.", "morning", "barista"],
        ],
      );
    } finally {
      await model.close();
    }
  });

  test("agentTurn without relevant memories sends the conversation as it is", async () => {
    const client = await mnemo.client();
    const subject = subjectId("agent-empty");
    const model = await mockModel(() => "Hello!");
    try {
      const turn = await agentTurn({
        mnemo: client,
        subject,
        messages: [{ role: "user", content: "Hi there" }],
        llm: { baseUrl: model.baseUrl, model: "mock-model" },
        context: { include: ["memories"] },
      });
      assert.equal(turn.block, "");
      assert.deepEqual(model.requests[0]!.body.messages, [{ role: "user", content: "Hi there" }]);
      assert.equal(model.requests[0]!.authorization, undefined);
      assert.equal(turn.recorded?.accepted, 2);
    } finally {
      await model.close();
    }
  });

  test("agentTurn: a failing model throws LlmError and records nothing", async () => {
    const client = await mnemo.client();
    const subject = subjectId("agent-fail");
    const model = await mockModel(() => "", 503);
    try {
      await assert.rejects(
        agentTurn({
          mnemo: client,
          subject,
          messages: [{ role: "user", content: "Are you there?" }],
          llm: { baseUrl: model.baseUrl, model: "mock-model" },
        }),
        (error: unknown) => error instanceof LlmError && error.status === 503 && error.body.includes("overloaded"),
      );
      const exported = await client.exportSubject(subject);
      assert.equal(exported.messages.length, 0);
    } finally {
      await model.close();
    }
  });
}
