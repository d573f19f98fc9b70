/** The examples, compiled into .build/examples/typescript, run against the test server. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { mockModel } from "./agent.cases.js";
import { eventually, mnemo, subjectId } from "./harness.js";

function example(name: string): string {
  // This file runs as .build/sdks/typescript/test/examples.cases.js.
  const path = fileURLToPath(new URL(`../../../examples/typescript/${name}.js`, import.meta.url));
  assert.ok(existsSync(path), `${path} is built (npm run build:test)`);
  return path;
}

function run(
  script: string,
  args: string[],
  env: Record<string, string>,
  stdin = "",
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [script, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
      },
    );
    child.stdin?.end(stdin);
  });
}

export function examples(): void {
  test("examples/typescript/gdpr.ts exports, erases and prints the receipt", async () => {
    const client = await mnemo.client();
    const subject = subjectId("example-gdpr");
    await client.postMessages(subject, [
      { role: "user", content: "I am allergic to peanuts." },
      { role: "assistant", content: "Noted, no peanuts." },
    ]);
    await client.createMemory(subject, { content: "Allergic to peanuts", kind: "fact" });

    const dir = mkdtempSync(join(tmpdir(), "mnemo-sdk-gdpr-"));
    try {
      const file = join(dir, "export.json");
      const result = await run(example("gdpr"), [subject, file], {
        MNEMO_URL: mnemo.url,
        MNEMO_TOKEN: await mnemo.token({ scopes: ["gdpr:export", "gdpr:erase"] }),
      });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`export of ${subject}: 2 message\\(s\\), 1 memory\\(ies\\)`));
      assert.match(result.stdout, /erasure [0-9a-f-]{36} completed at .*event\(s\) shredded/);
      assert.match(result.stdout, /subject_keys: data_keys_destroyed [1-9]/);
      assert.match(result.stdout, /export after erasure: 0 message\(s\), 0 memory\(ies\)/);
      const saved = JSON.parse(readFileSync(file, "utf8")) as { subject: string; messages: { content: string }[] };
      assert.equal(saved.subject, subject);
      assert.deepEqual(
        saved.messages.map((m) => m.content),
        ["I am allergic to peanuts.", "Noted, no peanuts."],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const after = await client.exportSubject(subject);
    assert.equal(after.messages.length + after.memories.length, 0);
    assert.equal(after.erasures.length, 1);
  });

  test("examples/typescript/agent-loop.ts chats with memory through a mock model", async () => {
    const client = await mnemo.client();
    const subject = subjectId("example-agent");
    await client.createMemory(subject, { content: "Has a dog called Biscuit", kind: "fact" });
    await eventually("the memory to be in the context block", async () => {
      const context = await client.context(subject, { messages: [{ role: "user", content: "my dog" }] });
      return context.block.includes("Biscuit");
    });
    const model = await mockModel((n) => `Reply number ${n}.`);
    try {
      const result = await run(
        example("agent-loop"),
        [],
        {
          MNEMO_URL: mnemo.url,
          MNEMO_TOKEN: await mnemo.token(),
          MNEMO_SUBJECT: subject,
          MNEMO_SESSION: "walk",
          OPENAI_BASE_URL: model.baseUrl,
          OPENAI_MODEL: "mock-model",
        },
        "What toy should I buy for my dog?\nThanks, see you!\n",
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /assistant> Reply number 1\./);
      assert.match(result.stdout, /assistant> Reply number 2\./);
      assert.match(result.stdout, /session walk ended; consolidation requested/);

      assert.equal(model.requests.length, 2);
      const first = model.requests[0]!.body.messages;
      assert.ok(
        first.some((m) => m.role === "system" && String(m.content).includes("Has a dog called Biscuit")),
        "the first turn carried the memory block",
      );
      // The second call carries the whole conversation so far.
      const second = model.requests[1]!.body.messages.filter((m) => m.role !== "system");
      assert.deepEqual(
        second.map((m) => [m.role, m.content]),
        [
          ["user", "What toy should I buy for my dog?"],
          ["assistant", "Reply number 1."],
          ["user", "Thanks, see you!"],
        ],
      );

      const exported = await client.exportSubject(subject);
      assert.deepEqual(
        exported.messages.map((m) => [m.role, m.content, m.session]),
        [
          ["user", "What toy should I buy for my dog?", "walk"],
          ["assistant", "Reply number 1.", "walk"],
          ["user", "Thanks, see you!", "walk"],
          ["assistant", "Reply number 2.", "walk"],
        ],
      );
      const requested = await client.listAudit({ subject, type: "ConsolidationRequested" });
      assert.equal(requested.events.length, 1);
    } finally {
      await model.close();
    }
  });
}
