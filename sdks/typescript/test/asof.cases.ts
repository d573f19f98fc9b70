/** As-of reads, the changes of a subject and the subject list, against the real server. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { MnemoNotFoundError, MnemoValidationError } from "@mnemo/client";

import { eventually, mnemo, sleep, subjectId } from "./harness.js";

/** An instant after everything recorded so far and before anything recorded next (Date keeps milliseconds). */
async function instant(): Promise<Date> {
  await sleep(5);
  const at = new Date();
  await sleep(5);
  return at;
}

export function asOf(): void {
  test("getMemory with asOf: the memory as it was then, and 404 before it existed", async () => {
    const client = await mnemo.client();
    const subject = subjectId("asof-get");
    const before = await instant();
    const created = await client.createMemory(subject, { content: "Drinks coffee", kind: "preference" });
    const then = await instant();
    await client.reviseMemory(created.id, { content: "Drinks tea", reason: "she switched" });

    const past = await client.getMemory(created.id, { asOf: then });
    assert.equal(past.content, "Drinks coffee");
    assert.equal(past.version, 1);
    assert.equal(past.as_of.event.type, "MemoryCreated");
    assert.equal(Date.parse(past.as_of.at), then.getTime());
    assert.equal((await client.getMemory(created.id)).content, "Drinks tea");
    await assert.rejects(
      client.getMemory(created.id, { asOf: before }),
      (error: unknown) => error instanceof MnemoNotFoundError && error.code === "memory_not_found",
    );
    await assert.rejects(
      client.getMemory(created.id, { asOf: "yesterday" }),
      (error: unknown) => error instanceof MnemoValidationError && error.code === "invalid_as_of",
    );
  });

  test("listMemories and profile with asOf", async () => {
    const client = await mnemo.client();
    const subject = subjectId("asof-list");
    const created = await client.createMemory(subject, { content: "Plays chess", kind: "fact" });
    const then = await instant();
    await client.deleteMemory(created.id);

    const page = await client.listMemories(subject, {}, { asOf: then });
    assert.deepEqual(page.memories.map((m) => [m.id, m.state, m.as_of.event.type]), [[created.id, "active", "MemoryCreated"]]);
    const deleted = await client.listMemories(subject, { state: "deleted" }, { asOf: new Date() });
    assert.deepEqual(deleted.memories.map((m) => [m.id, m.as_of.event.type]), [[created.id, "MemoryDeleted"]]);

    await assert.rejects(
      client.profile(subject, { asOf: "not a time" }),
      (error: unknown) => error instanceof MnemoValidationError && error.code === "invalid_as_of",
    );
    await assert.rejects(
      client.getProfile(subject, { asOf: then }),
      (error: unknown) => error instanceof MnemoNotFoundError && error.code === "profile_not_found",
    );
  });

  test("subjectChanges: each change with its memory before and after", async () => {
    const client = await mnemo.client();
    const subject = subjectId("asof-changes");
    const from = await instant();
    const created = await client.createMemory(subject, { content: "Lives in Lyon", kind: "fact" });
    await client.reviseMemory(created.id, { content: "Lives in Paris", reason: "she moved" });

    const changes = await client.subjectChanges(subject, { from });
    assert.equal(changes.next_cursor, null);
    assert.deepEqual(
      changes.items.map((c) => [c.memory_id, c.change, c.reason, c.before?.content ?? null, c.after?.content ?? null]),
      [
        [created.id, "created", null, null, "Lives in Lyon"],
        [created.id, "revised", "she moved", "Lives in Lyon", "Lives in Paris"],
      ],
    );
    assert.equal(changes.items[0]?.producer?.strategy, "api");
    const first = await client.subjectChanges(subject, { from, to: new Date(), limit: 1 });
    assert.equal(first.items.length, 1);
    assert.ok(first.next_cursor);
    const rest = await client.subjectChanges(subject, { from, limit: 1, cursor: first.next_cursor });
    assert.equal(rest.items[0]?.change, "revised");
  });

  test("listSubjects: counts by state, by prefix; a bound token sees its own subject", async () => {
    const client = await mnemo.client();
    const subject = subjectId("asof-subjects");
    await client.createMemory(subject, { content: "Has a cat", kind: "fact" });
    const archived = await client.createMemory(subject, { content: "Had a dog", kind: "fact" });
    await client.deleteMemory(archived.id);

    const page = await eventually("the subject to be listed", async () => {
      const listed = await client.listSubjects({ prefix: subject });
      return listed.items[0]?.memories.deleted === 1 ? listed : undefined;
    });
    assert.deepEqual(page.items.map((s) => s.subject), [subject]);
    assert.equal(page.items[0]?.memories.active, 1);
    assert.ok(page.items[0]?.last_activity);

    const bound = await mnemo.client({ scopes: ["memories:read"], subject });
    const own = await bound.listSubjects();
    assert.deepEqual(own.items.map((s) => s.subject), [subject]);
  });
}
