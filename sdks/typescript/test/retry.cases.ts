/**
 * Retries, through small local proxies in front of the real server that
 * fail on purpose: 503s, lost answers, 429 with Retry-After, reset
 * connections and a hung attempt.
 */
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";

import {
  MnemoClient,
  MnemoConnectionError,
  MnemoRateLimitError,
  MnemoServerError,
  type RetryOptions,
} from "@mnemo/client";

import { forward, localServer, mnemo, sendJson, subjectId, type Handler } from "./harness.js";

interface Seen {
  at: number;
  method: string;
  url: string;
  requestId: string | undefined;
  body: string;
}

/** A proxy to mnemo whose answers `handler` decides, given the attempt number (1-based). */
async function proxy(handler: (attempt: number, req: IncomingMessage, body: Buffer, res: Parameters<Handler>[1]) => Promise<void>) {
  const seen: Seen[] = [];
  const server = await localServer(async (req, res, body) => {
    seen.push({
      at: Date.now(),
      method: req.method ?? "",
      url: req.url ?? "",
      requestId: req.headers["x-request-id"] as string | undefined,
      body: body.toString(),
    });
    await handler(seen.length, req, body, res);
  });
  return { ...server, seen };
}

async function pass(req: IncomingMessage, body: Buffer, res: Parameters<Handler>[1]): Promise<void> {
  const answer = await forward(req, body);
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

const unavailable = { error: { code: "unavailable", message: "the event store is unavailable; retry later" } };
const FAST: RetryOptions = { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 100 };

async function clientVia(url: string, retry: RetryOptions | false = FAST, timeoutMs?: number): Promise<MnemoClient> {
  return new MnemoClient({
    baseUrl: url,
    token: await mnemo.token(),
    retry,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** The subject's MessageReceived events in the log. */
async function storedMessages(subject: string) {
  const admin = await mnemo.client();
  const exported = await admin.exportSubject(subject);
  return exported.messages;
}

export function retries(): void {
  test("503 twice, then forwarded: the post succeeds on the third attempt with the same message id", async () => {
    const p = await proxy(async (attempt, req, body, res) => {
      if (attempt <= 2) sendJson(res, 503, unavailable);
      else await pass(req, body, res);
    });
    try {
      const subject = subjectId("retry503");
      const client = await clientVia(p.url);
      const accepted = await client.postMessages(subject, [{ role: "user", content: "I collect vinyl records." }]);
      assert.equal(accepted.accepted, 1);
      assert.equal(p.seen.length, 3, "two failed attempts and one that went through");
      const ids = p.seen.map((s) => (JSON.parse(s.body) as { messages: { id: string }[] }).messages[0]!.id);
      assert.equal(new Set(ids).size, 1, "every attempt carried the same message id");
      assert.equal(accepted.events[0]!.id, ids[0]);
      assert.equal(new Set(p.seen.map((s) => s.requestId)).size, 1, "and the same X-Request-Id");
      const stored = await storedMessages(subject);
      assert.deepEqual(
        stored.map((m) => m.content),
        ["I collect vinyl records."],
      );
    } finally {
      await p.close();
    }
  });

  test("answers lost after the server stored the message: retried, and stored exactly once", async () => {
    // The proxy forwards every attempt but answers the first two with 503,
    // as if the server's answer was lost: only the client's message id
    // keeps the retries from storing the message three times.
    const p = await proxy(async (attempt, req, body, res) => {
      const answer = await forward(req, body);
      if (attempt <= 2) sendJson(res, 503, unavailable);
      else {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      }
    });
    try {
      const subject = subjectId("lost");
      const client = await clientVia(p.url);
      const accepted = await client.postMessages(subject, [
        { role: "user", content: "My sister lives in Porto." },
        { role: "assistant", content: "Do you visit her often?" },
      ]);
      assert.equal(p.seen.length, 3);
      assert.equal(accepted.accepted, 0, "the third attempt found both messages stored");
      assert.equal(accepted.duplicates, 2);
      const stored = await storedMessages(subject);
      assert.deepEqual(
        stored.map((m) => m.content),
        ["My sister lives in Porto.", "Do you visit her often?"],
      );
    } finally {
      await p.close();
    }
  });

  test("429 with Retry-After: the client waits as long as asked, then retries", async () => {
    const p = await proxy(async (attempt, req, body, res) => {
      if (attempt === 1) sendJson(res, 429, { error: { code: "rate_limited", message: "slow down" } }, { "Retry-After": "1" });
      else await pass(req, body, res);
    });
    try {
      const client = await clientVia(p.url);
      const subject = subjectId("ratelimit");
      const page = await client.listMemories(subject);
      assert.deepEqual(page.memories, []);
      assert.equal(p.seen.length, 2);
      const waited = p.seen[1]!.at - p.seen[0]!.at;
      assert.ok(waited >= 950, `waited ${waited} ms for Retry-After: 1`);

      // Retry-After beyond the client's limit: the error is thrown at once.
      const q = await proxy(async (_attempt, _req, _body, res) => {
        sendJson(res, 429, { error: { code: "rate_limited", message: "come back tomorrow" } }, { "Retry-After": "86400" });
      });
      try {
        const impatient = await clientVia(q.url, { ...FAST, maxRetryAfterMs: 5_000 });
        await assert.rejects(impatient.listMemories(subject), (error: unknown) => {
          assert.ok(error instanceof MnemoRateLimitError);
          assert.equal(error.code, "rate_limited");
          assert.equal(error.retryAfterMs, 86_400_000);
          return true;
        });
        assert.equal(q.seen.length, 1);
      } finally {
        await q.close();
      }
    } finally {
      await p.close();
    }
  });

  test("retries are bounded, back off exponentially, and can be turned off", async () => {
    const p = await proxy(async (_attempt, _req, _body, res) => sendJson(res, 503, unavailable));
    try {
      const client = await clientVia(p.url, { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 10_000 });
      await assert.rejects(client.getMemory(crypto.randomUUID()), (error: unknown) => {
        assert.ok(error instanceof MnemoServerError);
        assert.equal(error.status, 503);
        assert.equal(error.code, "unavailable");
        assert.equal(error.attempts, 3);
        return true;
      });
      assert.equal(p.seen.length, 3, "one attempt and two retries");
      const first = p.seen[1]!.at - p.seen[0]!.at;
      const second = p.seen[2]!.at - p.seen[1]!.at;
      assert.ok(first >= 45, `first backoff ${first} ms is at least half the base delay`);
      assert.ok(second >= 95, `second backoff ${second} ms is at least the base delay: it doubled`);

      const before = p.seen.length;
      const noRetry = await clientVia(p.url, false);
      await assert.rejects(noRetry.getMemory(crypto.randomUUID()), MnemoServerError);
      assert.equal(p.seen.length - before, 1);
    } finally {
      await p.close();
    }
  });

  test("calls that could duplicate are not retried on 503: create memory, erase subject", async () => {
    const p = await proxy(async (_attempt, _req, _body, res) => sendJson(res, 503, unavailable));
    try {
      const client = await clientVia(p.url);
      await assert.rejects(client.createMemory(subjectId("nodup"), { content: "Once only", kind: "fact" }), MnemoServerError);
      assert.equal(p.seen.length, 1);
      await assert.rejects(client.eraseSubject(subjectId("nodup")), MnemoServerError);
      assert.equal(p.seen.length, 2);
      // A correction is retried only when it states the version it is based on.
      const id = crypto.randomUUID();
      await assert.rejects(client.reviseMemory(id, { content: "x" }), MnemoServerError);
      assert.equal(p.seen.length, 3);
      await assert.rejects(client.reviseMemory(id, { content: "x" }, { ifMatch: 1 }), MnemoServerError);
      assert.equal(p.seen.length, 3 + 4);
      assert.equal(p.seen.at(-1)!.method, "PATCH");
    } finally {
      await p.close();
    }
  });

  test("a rate-limited create is retried: a 429 was not processed", async () => {
    const p = await proxy(async (attempt, req, body, res) => {
      if (attempt === 1) sendJson(res, 429, { error: { code: "rate_limited", message: "slow down" } });
      else await pass(req, body, res);
    });
    try {
      const client = await clientVia(p.url);
      const subject = subjectId("create429");
      const memory = await client.createMemory(subject, { content: "Speaks Portuguese", kind: "fact" });
      assert.equal(p.seen.length, 2);
      const exported = await (await mnemo.client()).exportSubject(subject);
      assert.deepEqual(
        exported.memories.map((m) => m.memory.id),
        [memory.id],
      );
    } finally {
      await p.close();
    }
  });

  test("network errors: a reset connection and a hung attempt are retried", async () => {
    const p = await proxy(async (attempt, req, body, res) => {
      if (attempt === 1) {
        req.socket.destroy();
        return;
      }
      if (attempt === 2) return; // never answers: the attempt times out
      await pass(req, body, res);
    });
    try {
      const client = await clientVia(p.url, FAST, 500);
      const health = await client.healthz();
      assert.equal(health.status, "ok");
      assert.equal(p.seen.length, 3);
    } finally {
      await p.close();
    }

    // Nothing listening at all: a MnemoConnectionError after the retries.
    const closed = await localServer(() => undefined);
    const url = closed.url;
    await closed.close();
    const client = await clientVia(url, { maxRetries: 1, baseDelayMs: 10 });
    await assert.rejects(client.healthz(), (error: unknown) => {
      assert.ok(error instanceof MnemoConnectionError);
      assert.equal(error.status, 0);
      assert.equal(error.code, "network_error");
      assert.equal(error.attempts, 2);
      return true;
    });
  });

  test("an aborted call stops retrying at once", async () => {
    const p = await proxy(async (_attempt, _req, _body, res) => sendJson(res, 503, unavailable));
    try {
      const client = await clientVia(p.url, { maxRetries: 5, baseDelayMs: 2_000 });
      const controller = new AbortController();
      const started = Date.now();
      setTimeout(() => controller.abort(new Error("the user gave up")), 200);
      await assert.rejects(client.healthz({ signal: controller.signal }), /the user gave up/);
      assert.ok(Date.now() - started < 1_500);
      assert.equal(p.seen.length, 1);
    } finally {
      await p.close();
    }
  });
}
