// /docs in a real browser (Debian's Chromium, driven by playwright-core)
// against a real `mnemo serve`, with every request off 127.0.0.1 aborted:
// the page renders every operation of openapi.json under its tag, with its
// Markdown, resolved schemas and examples, and a pasted token executes a
// request that the server really records. tests/docs-ui/run runs it.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

const MNEMO_BIN = process.env.MNEMO_BIN ?? "/var/tmp/mnemo-docs-target/debug/mnemo";
const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const PORTS = [18220, 18239];

let scratch;
let server;
let serverLog = "";
let base;
let token;
let doc;
let browser;

/** The first port of PORTS that nothing listens on. */
async function freePort() {
  for (let port = PORTS[0]; port <= PORTS[1]; port++) {
    const free = await new Promise((resolve) => {
      const probe = net.createServer();
      probe.once("error", () => resolve(false));
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port in ${PORTS[0]}-${PORTS[1]}`);
}

async function waitForHealth(deadlineMs) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (server.exitCode !== null) {
      throw new Error(`mnemo serve exited with ${server.exitCode}:\n${serverLog}`);
    }
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`mnemo serve did not answer /healthz:\n${serverLog}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every operation of the document as "METHOD /path", with its tag. */
function documentedOperations() {
  const operations = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (method === "parameters") continue;
      operations.set(`${method.toUpperCase()} ${path}`, operation.tags[0]);
    }
  }
  return operations;
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "mnemo-docs-ui-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(
    MNEMO_BIN,
    ["serve", "--data-dir", join(scratch, "data"), "--listen", `127.0.0.1:${port}`],
    { env: { ...process.env, MNEMO_EMBEDDER: "lexical" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  server.stdout.on("data", (chunk) => (serverLog += chunk));
  server.stderr.on("data", (chunk) => (serverLog += chunk));
  await waitForHealth(60_000);
  token = execFileSync(
    MNEMO_BIN,
    ["token", "--data-dir", join(scratch, "data"), "--tenant", "acme", "--scope", "all"],
    { encoding: "utf8" },
  ).trim();
  doc = await (await fetch(`${base}/openapi.json`)).json();
  browser = await chromium.launch({ executablePath: CHROMIUM });
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
  }
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test("/docs renders the document offline, and try-it-out reaches this server", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // The network is cut off: only this machine's loopback answers. Every
  // request the page makes is recorded, and any other host is aborted.
  const requested = [];
  const offHost = [];
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    requested.push(url.href);
    if (url.hostname !== "127.0.0.1") {
      offHost.push(url.href);
      return route.abort("internetdisconnected");
    }
    return route.continue();
  });
  // What the page's Content-Security-Policy refuses would break it
  // silently: count it.
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (event) =>
      window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`),
    );
  });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));

  const response = await page.goto(`${base}/docs`);
  assert.equal(response.status(), 200);
  const policy = response.headers()["content-security-policy"] ?? "";
  assert.match(policy, /script-src 'self'/, "the page is served under its policy");
  assert.match(policy, /connect-src 'self'/);
  await page.waitForSelector(".opblock", { timeout: 60_000 });

  // Every operation of the document, once, under its tag.
  const shown = await page.$$eval(".opblock-tag-section", (sections) =>
    sections.flatMap((section) => {
      const tag = section.querySelector(".opblock-tag").getAttribute("data-tag");
      return [...section.querySelectorAll(".opblock")].map((operation) => ({
        tag,
        operation: `${operation.querySelector(".opblock-summary-method").textContent.trim()} ${operation
          .querySelector(".opblock-summary-path")
          .getAttribute("data-path")}`,
      }));
    }),
  );
  const documented = documentedOperations();
  assert.ok(documented.size >= 20, `the document has its operations (${documented.size})`);
  assert.deepEqual(shown.map((s) => s.operation).sort(), [...documented.keys()].sort());
  for (const { tag, operation } of shown) {
    assert.equal(tag, documented.get(operation), `${operation} is listed under its tag`);
  }

  // Markdown is rendered: the description's `tenant` is code, not backticks.
  const info = page.locator(".information-container .info");
  assert.ok(await info.locator("code", { hasText: /^tenant$/ }).count(), "`tenant` rendered as code");
  assert.ok(!(await info.innerText()).includes("`tenant`"), "no literal backticks");

  // Open POST /v1/subjects/{subject}/messages: its request body's $ref is
  // resolved into the schema, and the document's example is shown.
  const operation = page.locator("#operations-ingest-postMessages");
  await operation.locator(".opblock-summary").click();
  const example = doc.paths["/v1/subjects/{subject}/messages"].post.requestBody.content["application/json"].example;
  await operation.locator(".body-param__example").waitFor();
  assert.deepEqual(JSON.parse(await operation.locator(".body-param__example").innerText()), example);
  await operation.locator(".opblock-section-request-body [data-name=model]").click();
  const schema = operation.locator(".opblock-section-request-body .model-box");
  await schema.getByText("MessageBatch", { exact: true }).waitFor();
  const batch = doc.components.schemas.MessageBatch;
  const shownSchema = await schema.innerText();
  assert.ok(shownSchema.includes(batch.description), `MessageBatch's description: ${shownSchema}`);
  for (const property of Object.keys(batch.properties)) {
    assert.ok(shownSchema.includes(property), `MessageBatch's ${property}: ${shownSchema}`);
  }

  // Paste the token under Authorize.
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".modal-ux");
  await dialog.locator("input").first().fill(token);
  await dialog.locator("button.authorize").click();
  await dialog.locator("button.btn-done").click();
  assert.equal(await dialog.count(), 0, "the dialog closed");

  // Try it out: post one message to a fresh subject and execute.
  const subject = `docs-ui-${Date.now()}`;
  const content = `Posted from the API reference at ${new Date().toISOString()}`;
  await operation.locator("button.try-out__btn").click();
  await operation.locator("input[placeholder=subject]").fill(subject);
  await operation
    .locator("textarea.body-param__text")
    .fill(JSON.stringify({ messages: [{ role: "user", content }] }));
  const [sent] = await Promise.all([
    page
      .waitForResponse(
        (r) => r.request().method() === "POST" && r.url().endsWith(`/v1/subjects/${subject}/messages`),
        { timeout: 20_000 },
      )
      .catch((error) => {
        throw new Error(`Execute reached no ${base}/v1/subjects/${subject}/messages: ${error.message}`);
      }),
    operation.locator("button.execute").click(),
  ]);
  assert.equal(new URL(sent.url()).origin, base, "executed against this server");
  assert.equal(sent.request().headers()["authorization"], `Bearer ${token}`);
  assert.equal(sent.status(), 202);
  const status = operation.locator(".live-responses-table tbody .response-col_status");
  await status.waitFor();
  assert.equal((await status.innerText()).trim(), "202", "the page shows the real status");

  // The server recorded it: the subject's export lists the message.
  const exported = await (
    await fetch(`${base}/v1/subjects/${subject}/export`, { headers: { Authorization: `Bearer ${token}` } })
  ).json();
  assert.deepEqual(
    exported.messages.map((m) => m.content),
    [content],
    JSON.stringify(exported),
  );

  // Kept after the run (the scratch dir is not), for a person to look at.
  const artifacts = process.env.MNEMO_ARTIFACTS_DIR || mkdtempSync(join(tmpdir(), "mnemo-docs-ui-artifacts-"));
  mkdirSync(artifacts, { recursive: true });
  const screenshot = join(artifacts, "docs.png");
  await page.screenshot({ path: screenshot, fullPage: true });
  assert.ok(statSync(screenshot).size > 10_000);
  console.log(`screenshot: ${screenshot}`);

  assert.deepEqual(offHost, [], "no request left this machine");
  assert.ok(requested.length >= 5, `the page's requests were seen (${requested.length})`);
  assert.deepEqual(await page.evaluate(() => window.__violations), [], "nothing refused by the policy");
  assert.deepEqual(pageErrors, []);
  await context.close();
});
