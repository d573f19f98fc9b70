/** Every operation of the API through the client, against the real server. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MnemoClient,
  MnemoConflictError,
  MnemoGoneError,
  MnemoNotFoundError,
  type MessageInput,
  type SearchResult,
} from "@mnemo/client";

import { TENANT, eventually, mnemo, subjectId } from "./harness.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Posts the README's conversation and asks for consolidation; waits for the "green tea" memory. */
async function consolidatedSubject(client: MnemoClient, label: string): Promise<string> {
  const subject = subjectId(label);
  await client.postMessages(subject, [
    { role: "user", content: "Hi! I live in Lyon.", session: "s1" },
    { role: "assistant", content: "Noted, welcome to Lyon!", session: "s1" },
    { role: "user", content: "I love green tea, and from now on always answer in French.", session: "s1" },
  ]);
  const accepted = await client.consolidate(subject);
  assert.equal(accepted.status, "requested");
  assert.match(accepted.event_id, UUID);
  await eventually("the consolidated memory to be listed", async () => {
    const page = await client.listMemories(subject);
    return page.memories.some((m) => m.content?.includes("green tea"));
  });
  return subject;
}

export function operations(): void {
  test("healthz and readyz", async () => {
    const client = await mnemo.client();
    assert.deepEqual(await client.healthz(), { status: "ok" });
    const ready = await client.readyz();
    assert.equal(ready.status, "ready");
    assert.equal(ready.embedder?.kind, "lexical");
    assert.equal(typeof ready.relay_lag, "number");
  });

  test("metrics, the OpenAPI document and the docs page", async () => {
    const client = new MnemoClient({ baseUrl: mnemo.url });
    const metrics = await client.metrics();
    assert.match(metrics, /^# (HELP|TYPE) /m);
    const doc = await client.openapiDocument();
    assert.equal(doc["openapi"], "3.1.0");
    const docs = await client.docsPage();
    assert.match(docs, /<html/i);
    // The page is Swagger UI's shell; it renders the document in a browser
    // (tests/docs-ui checks what it shows).
    assert.match(docs, /docs\/swagger-ui-bundle\.js/);
  });

  test("postMessages gives every message an id and a re-post is deduplicated", async () => {
    const client = await mnemo.client();
    const subject = subjectId("post");
    const input: MessageInput[] = [
      { role: "user", content: "I started learning the cello last week.", session: "s1", agent: "tutor" },
      { role: "assistant", content: "How exciting! How is it going?", session: "s1", agent: "tutor" },
      { id: "my-own-id", role: "user", content: "Slowly, but I like it.", session: "s1", agent: "tutor" },
    ];
    const first = await client.postMessages(subject, input);
    assert.equal(first.accepted, 3);
    assert.equal(first.duplicates, 0);
    assert.equal(first.events.length, 3);
    assert.match(first.events[0]!.id, UUID, "the client assigned a UUID");
    assert.match(first.events[1]!.id, UUID);
    assert.notEqual(first.events[0]!.id, first.events[1]!.id);
    assert.equal(first.events[2]!.id, "my-own-id", "a given id is kept");
    assert.equal(input[0]!.id, undefined, "the caller's messages are not modified");

    // The same messages with the ids the server saw: all duplicates.
    const again = await client.postMessages(
      subject,
      input.map((m, i) => ({ ...m, id: first.events[i]!.id })),
    );
    assert.equal(again.accepted, 0);
    assert.equal(again.duplicates, 3);
    assert.ok(again.events.every((e) => e.duplicate));
  });

  test("createMemory, getMemory, reviseMemory, memoryHistory, deleteMemory and listMemories", async () => {
    const client = await mnemo.client();
    const subject = subjectId("crud");
    const created = await client.createMemory(subject, {
      content: "Prefers green tea over coffee",
      kind: "preference",
      tags: ["Drinks", "drinks"],
      agent: "support-bot",
    });
    assert.match(created.id, UUID);
    assert.equal(created.subject, subject);
    assert.equal(created.version, 1);
    assert.equal(created.state, "active");
    assert.deepEqual(created.tags, ["drinks"]);
    assert.equal(created.provenance.producer.strategy, "api");

    const read = await client.getMemory(created.id);
    // The create answer's timestamps carry nanoseconds and may differ from the stored ones by a few microseconds.
    const { created_at: readCreated, updated_at: readUpdated, ...readRest } = read;
    const { created_at: createdAt, updated_at: createdUpdated, ...createdRest } = created;
    assert.deepEqual(readRest, createdRest);
    assert.ok(Math.abs(Date.parse(readCreated) - Date.parse(createdAt)) < 1_000);
    assert.ok(Math.abs(Date.parse(readUpdated) - Date.parse(createdUpdated)) < 1_000);

    const revised = await client.reviseMemory(
      created.id,
      { content: "Prefers oolong tea over coffee", reason: "the user corrected it" },
      { ifMatch: 1 },
    );
    assert.equal(revised.version, 2);
    assert.equal(revised.content, "Prefers oolong tea over coffee");

    // A stale If-Match is refused: nothing is written.
    await assert.rejects(
      client.reviseMemory(created.id, { importance: 0.2 }, { ifMatch: 1 }),
      (error: unknown) => error instanceof MnemoConflictError && error.status === 409 && error.code === "version_conflict",
    );
    // expected_version in the body works the same way.
    const third = await client.reviseMemory(created.id, { importance: 0.95, expected_version: 2 });
    assert.equal(third.version, 3);
    assert.equal(third.importance, 0.95);

    const history = await client.memoryHistory(created.id);
    assert.equal(history.memory_id, created.id);
    assert.equal(history.subject, subject);
    assert.deepEqual(
      history.versions.map((v) => [v.version, v.event_type]),
      [
        [1, "MemoryCreated"],
        [2, "MemoryRevised"],
        [3, "MemoryRevised"],
      ],
    );
    assert.equal(history.versions[1]!.reason, "the user corrected it");
    assert.equal(history.versions[1]!.memory?.content, "Prefers oolong tea over coffee");

    const other = await client.createMemory(subject, { content: "Lives in Lyon", kind: "fact", tags: ["home"] });
    await eventually("both memories to be listed", async () => (await client.listMemories(subject)).memories.length === 2);
    const facts = await client.listMemories(subject, { kind: "fact" });
    assert.deepEqual(
      facts.memories.map((m) => m.id),
      [other.id],
    );
    const tagged = await client.listMemories(subject, { tag: "drinks" });
    assert.deepEqual(
      tagged.memories.map((m) => m.id),
      [created.id],
    );

    const deleted = await client.deleteMemory(created.id, { reason: "the user asked to forget this" });
    assert.equal(deleted.state, "deleted");
    assert.equal((await client.getMemory(created.id)).state, "deleted");
    // Deleting again is idempotent.
    assert.equal((await client.deleteMemory(created.id)).state, "deleted");
    const last = (await client.memoryHistory(created.id)).versions.at(-1)!;
    assert.equal(last.event_type, "MemoryDeleted");
    assert.equal(last.reason, "the user asked to forget this");

    await eventually("the deleted memory to leave the default list", async () => {
      const page = await client.listMemories(subject);
      return page.memories.length === 1 && page.memories[0]!.id === other.id;
    });
    const withDeleted = await client.listMemories(subject, { state: "deleted" });
    assert.deepEqual(
      withDeleted.memories.map((m) => m.id),
      [created.id],
    );
  });

  test("consolidate, then search and context find the consolidated memory", async () => {
    const client = await mnemo.client();
    const subject = await consolidatedSubject(client, "consolidate");

    const found = await eventually("search to return the memory", async () => {
      const { results } = await client.search(subject, { query: "does she like green tea?", k: 5, include: ["memories"] });
      return results.find((r: SearchResult) => r.type === "memory" && r.memory?.content?.includes("green tea"));
    });
    assert.equal(found.memory?.subject, subject);
    assert.ok(found.memory!.provenance.source_event_ids.length > 0, "a consolidated memory names its messages");
    assert.equal(typeof found.score, "number");
    assert.equal(typeof found.components.relevance, "number");

    // A plain string is a query too; episodes (the messages as said) are searchable.
    const episodes = await eventually("the episodes to be searchable", async () => {
      const { results } = await client.search(subject, "Lyon");
      return results.filter((r) => r.type === "episode").length > 0 ? results : undefined;
    });
    assert.ok(episodes.some((r) => r.episode?.content.includes("Lyon")));

    const context = await eventually("the context block to hold the memory", async () => {
      const answer = await client.context(subject, {
        messages: [
          { role: "system", content: "You are a barista." },
          { role: "user", content: "Any ideas for a green tea drink in the morning?" },
        ],
        token_budget: 300,
        include: ["memories"],
      });
      return answer.block.includes("green tea") ? answer : undefined;
    });
    assert.match(context.block, /^Relevant memories about the user/);
    assert.ok(context.tokens > 0 && context.tokens <= 300);
    assert.ok(context.memories.length > 0);
  });

  test("profile: a 404 before consolidation, then the rolling summary; consolidationReport counts the model's calls", async () => {
    const client = await mnemo.client();
    const subject = subjectId("profile");
    await assert.rejects(
      client.profile(subject),
      (error: unknown) => error instanceof MnemoNotFoundError && error.code === "profile_not_found",
    );
    await client.postMessages(subject, [
      { role: "user", content: "I work as a nurse at the city hospital." },
      { role: "user", content: "I swim in the lake every Saturday morning." },
    ]);
    await client.consolidate(subject);
    const profile = await eventually("the profile", async () => {
      try {
        return await client.profile(subject);
      } catch (error) {
        if (error instanceof MnemoNotFoundError) return undefined;
        throw error;
      }
    });
    assert.equal(profile.subject, subject);
    assert.equal(profile.version, 1);
    assert.match(profile.summary, /nurse/);
    assert.match(profile.summary, /swim/);
    assert.equal(profile.memory_ids.length, 2);
    assert.equal(profile.producer?.strategy, "llm");
    const memories = await eventually("the memories to be listed", async () => {
      const page = await client.listMemories(subject);
      return page.memories.length === 2 ? page.memories : undefined;
    });
    assert.deepEqual(
      [...profile.memory_ids].sort(),
      memories.map((m) => m.id).sort(),
    );

    const report = await client.consolidationReport({ days: 7 });
    assert.equal(report.tenant, TENANT);
    assert.equal(report.days, 7);
    assert.ok((report.report.totals?.llm_calls ?? 0) >= 2, JSON.stringify(report.report.totals));
    assert.ok((report.report.models?.["mock"] ?? 0) >= 1, JSON.stringify(report.report.models));
  });

  test("listAudit shows the subject's events, filtered by type", async () => {
    const client = await mnemo.client();
    const subject = subjectId("audit");
    await client.postMessages(subject, [{ role: "user", content: "I play chess on Sundays." }]);
    const memory = await client.createMemory(subject, { content: "Plays chess on Sundays", kind: "fact" });
    const page = await eventually("the events to be in the audit log", async () => {
      const p = await client.listAudit({ subject, limit: 50 });
      return p.events.length >= 2 ? p : undefined;
    });
    const types = page.events.map((e) => e.type);
    assert.ok(types.includes("MessageReceived"), types.join());
    assert.ok(types.includes("MemoryCreated"), types.join());
    assert.ok(page.events.every((e) => e.subject === subject));
    const created = page.events.find((e) => e.type === "MemoryCreated")!;
    assert.equal(created.stream, `memory-${memory.id}`);
    assert.equal(created.actor, "dev");

    const onlyCreated = await client.listAudit({ subject, type: "MemoryCreated" });
    assert.deepEqual(
      onlyCreated.events.map((e) => e.type),
      ["MemoryCreated"],
    );
  });

  test("exportSubject, eraseSubject, getErasure and waitForErasure", async () => {
    const client = await mnemo.client();
    const subject = subjectId("gdpr");
    await client.postMessages(subject, [{ role: "user", content: "My favourite colour is teal." }]);
    const memory = await client.createMemory(subject, { content: "Favourite colour: teal", kind: "preference" });

    const exported = await client.exportSubject(subject);
    assert.equal(exported.tenant, TENANT);
    assert.equal(exported.subject, subject);
    assert.equal(exported.messages.length, 1);
    assert.equal(exported.messages[0]!.content, "My favourite colour is teal.");
    assert.deepEqual(
      exported.memories.map((m) => m.memory.id),
      [memory.id],
    );
    assert.equal(exported.counts.messages, 1);

    const accepted = await client.eraseSubject(subject);
    assert.equal(accepted.status, "pending");
    assert.equal(accepted.receipt, `/v1/erasures/${accepted.erasure_id}`);
    const status = await client.getErasure(accepted.erasure_id);
    assert.equal(status.erasure_id, accepted.erasure_id);
    assert.ok(status.status === "pending" || status.status === "completed");

    const done = await client.waitForErasure(accepted.erasure_id, { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal(done.status, "completed");
    assert.equal(done.receipt?.subject, subject);
    assert.ok(done.receipt!.steps.some((s) => s.store === "subject_keys" && s.count > 0));
    assert.ok(done.receipt!.events_shredded >= 2);

    const after = await client.exportSubject(subject);
    assert.equal(after.messages.length, 0);
    assert.equal(after.memories.length, 0);
    assert.deepEqual(
      after.erasures.map((e) => e.erasure_id),
      [accepted.erasure_id],
    );
    await assert.rejects(
      client.getMemory(memory.id),
      (error: unknown) => error instanceof MnemoGoneError && error.status === 410 && error.code === "subject_erased",
    );
  });
}
