/** Error mapping: each HTTP failure becomes the right MnemoError subclass with the server's code. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MnemoAuthError,
  MnemoClient,
  MnemoError,
  MnemoNotFoundError,
  MnemoValidationError,
} from "@mnemo/client";

import { mnemo, subjectId } from "./harness.js";

/** A predicate for assert.rejects: the class, status and code. */
function failsWith(cls: abstract new (...args: never[]) => MnemoError, status: number, code: string) {
  return (error: unknown) => {
    assert.ok(error instanceof cls, `expected ${cls.name}, got ${String(error)}`);
    assert.ok(error instanceof MnemoError);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    assert.ok(error.message.length > 0);
    return true;
  };
}

/** A fetch that counts the calls it forwards and keeps their request headers. */
function countingFetch() {
  const calls: Headers[] = [];
  const f: typeof fetch = async (input, init) => {
    calls.push(new Headers(init?.headers));
    return fetch(input, init);
  };
  return { calls, fetch: f };
}

export function errors(): void {
  test("401: a bad token and a missing token", async () => {
    const counting = countingFetch();
    const bad = new MnemoClient({ baseUrl: mnemo.url, token: "not-a-jwt", fetch: counting.fetch });
    await assert.rejects(bad.listMemories(subjectId("auth")), failsWith(MnemoAuthError, 401, "malformed_token"));
    assert.equal(counting.calls.length, 1, "a 401 is not retried");

    const forged = new MnemoClient({
      baseUrl: mnemo.url,
      token: `${(await mnemo.token()).slice(0, -4)}AAAA`,
    });
    await assert.rejects(forged.search(subjectId("auth"), "anything"), failsWith(MnemoAuthError, 401, "invalid_signature"));

    const anonymous = new MnemoClient({ baseUrl: mnemo.url, token: "" });
    await assert.rejects(anonymous.getMemory(crypto.randomUUID()), failsWith(MnemoAuthError, 401, "missing_token"));
  });

  test("403: a token without the scope, and a subject-bound token on another subject", async () => {
    const reader = await mnemo.client({ scopes: ["memories:read"] });
    const subject = subjectId("scope");
    await assert.rejects(
      reader.postMessages(subject, [{ role: "user", content: "hello there" }]),
      failsWith(MnemoAuthError, 403, "insufficient_scope"),
    );
    await assert.rejects(reader.exportSubject(subject), failsWith(MnemoAuthError, 403, "insufficient_scope"));
    // The same token may read.
    assert.deepEqual((await reader.listMemories(subject)).memories, []);

    const mine = subjectId("bound");
    const bound = await mnemo.client({ scopes: ["all"], subject: mine });
    const ok = await bound.postMessages(mine, [{ role: "user", content: "I am allowed here." }]);
    assert.equal(ok.accepted, 1);
    await assert.rejects(
      bound.postMessages(subjectId("someone-else"), [{ role: "user", content: "but not there" }]),
      failsWith(MnemoAuthError, 403, "subject_forbidden"),
    );
    const theirs = await (await mnemo.client()).createMemory(subjectId("theirs"), { content: "Not yours", kind: "fact" });
    await assert.rejects(bound.getMemory(theirs.id), failsWith(MnemoAuthError, 403, "subject_forbidden"));
  });

  test("404: unknown memory and erasure ids", async () => {
    const client = await mnemo.client();
    await assert.rejects(client.getMemory(crypto.randomUUID()), failsWith(MnemoNotFoundError, 404, "memory_not_found"));
    await assert.rejects(client.memoryHistory(crypto.randomUUID()), failsWith(MnemoNotFoundError, 404, "memory_not_found"));
    await assert.rejects(client.getErasure(crypto.randomUUID()), failsWith(MnemoNotFoundError, 404, "erasure_not_found"));
  });

  test("400 and 422: bad input is a validation error, not retried, with the request id", async () => {
    const counting = countingFetch();
    const client = await mnemo.client({}, { fetch: counting.fetch });
    await assert.rejects(client.getMemory("not-a-uuid"), failsWith(MnemoValidationError, 400, "invalid_id"));
    await assert.rejects(
      client.postMessages("not a subject!", [{ role: "user", content: "hi" }]),
      failsWith(MnemoValidationError, 400, "invalid_id"),
    );
    await assert.rejects(
      client.listMemories(subjectId("bad"), { kind: "opinion" }),
      failsWith(MnemoValidationError, 400, "invalid_kind"),
    );
    await assert.rejects(
      client.createMemory(subjectId("bad"), { content: "   ", kind: "fact" }),
      failsWith(MnemoValidationError, 422, "invalid_content"),
    );
    await assert.rejects(
      client.search(subjectId("bad"), { query: "tea", k: 1000 }),
      failsWith(MnemoValidationError, 422, "invalid_k"),
    );
    assert.equal(counting.calls.length, 5, "no 4xx was retried");

    const requestId = crypto.randomUUID();
    await assert.rejects(client.getMemory("nope", { requestId }), (error: unknown) => {
      assert.ok(error instanceof MnemoValidationError);
      assert.equal(error.requestId, requestId);
      assert.equal(error.endpoint, "GET /v1/memories/nope");
      return true;
    });
    assert.equal(counting.calls.at(-1)!.get("x-request-id"), requestId);
  });
}
