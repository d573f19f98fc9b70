/**
 * Client behaviour that needs no server: defaults from the environment,
 * answers a proxy or the HTTP layer could give (bare errors, non-JSON
 * bodies, an HTTP-date Retry-After), and the token source.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { DEFAULT_BASE_URL, MnemoClient, MnemoError, MnemoServerError, MnemoValidationError } from "@mnemo/client";

interface Call {
  url: string;
  init: RequestInit | undefined;
  headers: Headers;
}

/** A fetch that answers with the given responses in turn (the last one repeats). */
function scripted(...responses: (() => Response)[]) {
  const calls: Call[] = [];
  const f: typeof fetch = async (input, init) => {
    calls.push({ url: String(input), init, headers: new Headers(init?.headers) });
    const next = responses[Math.min(calls.length - 1, responses.length - 1)]!;
    return next();
  };
  return { calls, fetch: f };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

describe("client without a server", () => {
  test("baseUrl and token default to MNEMO_URL and MNEMO_TOKEN", async () => {
    const saved = { url: process.env.MNEMO_URL, token: process.env.MNEMO_TOKEN };
    try {
      process.env.MNEMO_URL = "http://mnemo.test:9999/";
      process.env.MNEMO_TOKEN = "token-from-env";
      const s = scripted(json(200, { status: "ok" }));
      const client = new MnemoClient({ fetch: s.fetch });
      assert.equal(client.baseUrl, "http://mnemo.test:9999");
      await client.healthz();
      assert.equal(s.calls[0]!.url, "http://mnemo.test:9999/healthz");
      assert.equal(s.calls[0]!.headers.get("authorization"), "Bearer token-from-env");

      delete process.env.MNEMO_URL;
      delete process.env.MNEMO_TOKEN;
      const bare = new MnemoClient({ fetch: s.fetch });
      assert.equal(bare.baseUrl, DEFAULT_BASE_URL);
      await bare.healthz();
      assert.equal(s.calls[1]!.headers.get("authorization"), null);

      const explicit = new MnemoClient({ baseUrl: "http://other:1", token: "t", fetch: s.fetch });
      await explicit.healthz();
      assert.equal(s.calls[2]!.url, "http://other:1/healthz");
    } finally {
      if (saved.url === undefined) delete process.env.MNEMO_URL;
      else process.env.MNEMO_URL = saved.url;
      if (saved.token === undefined) delete process.env.MNEMO_TOKEN;
      else process.env.MNEMO_TOKEN = saved.token;
    }
  });

  test("paths and queries are encoded; a JSON body is sent as application/json", async () => {
    const s = scripted(json(200, { memories: [], next_cursor: null }), json(202, { accepted: 1, duplicates: 0, events: [] }));
    const client = new MnemoClient({ baseUrl: "http://m", token: "t", fetch: s.fetch });
    await client.listMemories("a:b.c_d-e", { kind: "fact,rule", tag: "x y", limit: 5, cursor: undefined });
    assert.equal(s.calls[0]!.url, "http://m/v1/subjects/a%3Ab.c_d-e/memories?kind=fact%2Crule&tag=x+y&limit=5");
    assert.equal(s.calls[0]!.init?.body, undefined);
    await client.postMessages("s", [{ role: "user", content: "hi" }]);
    assert.equal(s.calls[1]!.headers.get("content-type"), "application/json");
    assert.equal(s.calls[1]!.init?.method, "POST");
  });

  test("an error without a JSON body gets the code http_<status>", async () => {
    const s = scripted(() => new Response("", { status: 431, statusText: "Request Header Fields Too Large" }));
    const client = new MnemoClient({ baseUrl: "http://m", fetch: s.fetch });
    await assert.rejects(client.healthz(), (error: unknown) => {
      assert.ok(error instanceof MnemoError);
      assert.equal(error.status, 431);
      assert.equal(error.code, "http_431");
      assert.equal(error.message, "Request Header Fields Too Large");
      return true;
    });
    const bare400 = scripted(() => new Response("bad request line", { status: 400 }));
    await assert.rejects(new MnemoClient({ baseUrl: "http://m", fetch: bare400.fetch }).healthz(), (error: unknown) => {
      assert.ok(error instanceof MnemoValidationError);
      assert.equal(error.code, "http_400");
      assert.equal(error.message, "bad request line");
      return true;
    });
  });

  test("a success that is not JSON is an invalid_response error, not retried", async () => {
    const s = scripted(() => new Response("<html>proxy page</html>", { status: 200 }));
    const client = new MnemoClient({ baseUrl: "http://m", fetch: s.fetch, retry: { baseDelayMs: 1 } });
    await assert.rejects(client.healthz(), (error: unknown) => error instanceof MnemoError && error.code === "invalid_response");
    assert.equal(s.calls.length, 1);
  });

  test("Retry-After as an HTTP date is honoured", async () => {
    const when = new Date(Date.now() + 1_500).toUTCString(); // whole seconds: waits 0.5 to 1.5 s
    const s = scripted(json(503, { error: { code: "unavailable", message: "later" } }, { "Retry-After": when }), json(200, { status: "ok" }));
    const client = new MnemoClient({ baseUrl: "http://m", fetch: s.fetch, retry: { baseDelayMs: 1 } });
    const started = Date.now();
    await client.healthz();
    assert.equal(s.calls.length, 2);
    assert.ok(Date.now() - started >= 400, `waited ${Date.now() - started} ms`);
  });

  test("a token function is asked before every attempt", async () => {
    let n = 0;
    const s = scripted(json(503, { error: { code: "unavailable", message: "later" } }), json(200, { status: "ok" }));
    const client = new MnemoClient({
      baseUrl: "http://m",
      token: async () => `token-${++n}`,
      fetch: s.fetch,
      retry: { baseDelayMs: 1 },
    });
    await client.healthz();
    assert.deepEqual(
      s.calls.map((c) => c.headers.get("authorization")),
      ["Bearer token-1", "Bearer token-2"],
    );
  });

  test("a 507 is not retried: a full disk waits for an operator, not for the client", async () => {
    const s = scripted(
      json(507, { error: { code: "insufficient_storage", message: "full", retry_after_seconds: 60, limit: "min_free_disk_bytes", limit_value: 1 } }, { "Retry-After": "60" }),
      json(200, { status: "ok" }),
    );
    const client = new MnemoClient({ baseUrl: "http://m", fetch: s.fetch, retry: { baseDelayMs: 1 } });
    await assert.rejects(client.healthz(), (error: unknown) => error instanceof MnemoServerError && error.code === "insufficient_storage");
    assert.equal(s.calls.length, 1);
  });

  test("retryStatuses narrows what is retried", async () => {
    const s = scripted(json(500, { error: { code: "internal_error", message: "boom" } }));
    const client = new MnemoClient({
      baseUrl: "http://m",
      fetch: s.fetch,
      retry: { baseDelayMs: 1, retryStatuses: (status) => status === 503 },
    });
    await assert.rejects(client.healthz(), MnemoServerError);
    assert.equal(s.calls.length, 1);
  });
});
