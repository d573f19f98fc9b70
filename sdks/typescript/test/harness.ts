/**
 * The test harness: one real `mnemo serve` for the whole run (lexical
 * embedder, temporary data dir), tokens minted with `mnemo token`, small
 * local HTTP servers for the failure and model stand-ins, and polling.
 *
 * The server consolidates with a model: `mnemo dev llm`, the binary's
 * deterministic OpenAI-compatible stand-in (every user message of at least
 * 4 words becomes a fact; profiles are the first new memories), with
 * `profile_every = 2`, so that profiles and the consolidation report have
 * something to show.
 *
 * `MNEMO_BIN` names the server binary (default
 * /var/tmp/mnemo-main-target/debug/mnemo). Every port used is in
 * 18100–18119 (`MNEMO_TEST_PORTS=FIRST-LAST` to change the range).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { MnemoClient, type MnemoClientOptions } from "@mnemo/client";

const execFileAsync = promisify(execFile);

export const MNEMO_BIN = process.env.MNEMO_BIN || "/var/tmp/mnemo-main-target/debug/mnemo";
export const TENANT = "sdk-ts";

function portRange(): number[] {
  const spec = process.env.MNEMO_TEST_PORTS || "18100-18119";
  const match = /^(\d+)-(\d+)$/.exec(spec);
  if (!match) throw new Error(`MNEMO_TEST_PORTS must be FIRST-LAST, got ${spec}`);
  const ports: number[] = [];
  for (let p = Number(match[1]); p <= Number(match[2]); p++) ports.push(p);
  return ports;
}

/** Ports handed out and not yet released, so two servers of the run never race for one. */
const taken = new Set<number>();

/** Listens on the first free port of the range; returns it. */
export async function listenInRange(server: Server): Promise<number> {
  for (const port of portRange()) {
    if (taken.has(port)) continue;
    const ok = await new Promise<boolean>((resolve) => {
      const onError = () => resolve(false);
      server.once("error", onError);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", onError);
        resolve(true);
      });
    });
    if (ok) {
      taken.add(port);
      server.once("close", () => taken.delete(port));
      return port;
    }
  }
  throw new Error(`no free port in ${process.env.MNEMO_TEST_PORTS || "18100-18119"}`);
}

async function portIsFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Calls `probe` until it returns something other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  { timeoutMs = 30_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    }
    await sleep(intervalMs);
  }
}

let counter = 0;
/** A subject id of its own for each test. */
export function subjectId(label: string): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export interface TokenRequest {
  scopes?: string[];
  subject?: string;
  tenant?: string;
  actor?: string;
}

/** A child process of the run, with the end of its output kept for diagnostics. */
class Child {
  log = "";
  exited = false;
  readonly process: ChildProcess;

  constructor(args: string[], env: Record<string, string>) {
    this.process = spawn(MNEMO_BIN, args, {
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-64_000);
    };
    this.process.stdout?.on("data", keep);
    this.process.stderr?.on("data", keep);
    this.process.once("exit", () => {
      this.exited = true;
    });
  }

  /** Waits until `probe` says yes; false when the process exited first (e.g. its port was taken). */
  async ready(probe: () => Promise<boolean>, timeoutMs = 120_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exited) return false;
      if (await probe().catch(() => false)) return true;
      await sleep(100);
    }
    this.process.kill("SIGKILL");
    throw new Error(`not ready within ${timeoutMs} ms:\n${this.log.slice(-4000)}`);
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  killNow(): void {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGKILL");
  }
}

/** Any HTTP answer at all from `url`. */
async function answers(url: string): Promise<boolean> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return true;
}

/** A 200 from `url`. */
async function answers200(url: string): Promise<boolean> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status === 200;
}

/** Starts `make(port)` on the first free port of the range whose process gets ready. */
async function startInRange(
  what: string,
  make: (port: number) => { child: Child; probe: () => Promise<boolean> },
): Promise<{ child: Child; port: number }> {
  let log = "";
  for (const port of portRange()) {
    if (taken.has(port) || !(await portIsFree(port))) continue;
    taken.add(port);
    const { child, probe } = make(port);
    if (await child.ready(probe)) return { child, port };
    log = child.log;
    taken.delete(port);
  }
  throw new Error(`${what} did not start on any port of the range:\n${log.slice(-4000)}`);
}

export class MnemoServer {
  private server: Child | undefined;
  private model: Child | undefined;
  private ports: number[] = [];
  private dataDir = "";
  readonly tokens = new Map<string, string>();
  url = "";
  port = 0;

  async start(): Promise<void> {
    if (!existsSync(MNEMO_BIN)) {
      throw new Error(`no mnemo binary at ${MNEMO_BIN}: build it or set MNEMO_BIN`);
    }
    this.dataDir = mkdtempSync(join(tmpdir(), "mnemo-sdk-ts-"));
    // Profiles after every 2 new memories (default 5).
    writeFileSync(join(this.dataDir, "mnemo.toml"), "[consolidation.default]\nprofile_every = 2\n");

    const model = await startInRange("mnemo dev llm", (port) => ({
      child: new Child(["dev", "llm", "--port", String(port)], {}),
      probe: () => answers(`http://127.0.0.1:${port}/`),
    }));
    this.model = model.child;
    this.ports.push(model.port);

    const server = await startInRange("mnemo serve", (port) => ({
      child: new Child(["serve", "--data-dir", this.dataDir, "--listen", `127.0.0.1:${port}`], {
        MNEMO_EMBEDDER: "lexical",
        MNEMO_LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`,
        MNEMO_LLM_MODEL: "mock",
      }),
      probe: () => answers200(`http://127.0.0.1:${port}/readyz`),
    }));
    this.server = server.child;
    this.ports.push(server.port);
    this.port = server.port;
    this.url = `http://127.0.0.1:${server.port}`;
  }

  /** A token minted with `mnemo token` (cached per request). */
  async token(request: TokenRequest = {}): Promise<string> {
    const scopes = request.scopes ?? ["all"];
    const tenant = request.tenant ?? TENANT;
    const key = JSON.stringify([tenant, request.subject ?? null, scopes, request.actor ?? null]);
    const cached = this.tokens.get(key);
    if (cached) return cached;
    const args = ["token", "--data-dir", this.dataDir, "--tenant", tenant, "--scope", ...scopes];
    if (request.subject) args.push("--subject", request.subject);
    if (request.actor) args.push("--actor", request.actor);
    const { stdout } = await execFileAsync(MNEMO_BIN, args, { env: { ...process.env, RUST_LOG: "error" } });
    const token = stdout.trim();
    if (token.split(".").length !== 3) throw new Error(`mnemo token printed no JWT: ${stdout}`);
    this.tokens.set(key, token);
    return token;
  }

  /** A client of this server with a token for `request` and quick retries. */
  async client(request: TokenRequest = {}, options: MnemoClientOptions = {}): Promise<MnemoClient> {
    return new MnemoClient({
      baseUrl: this.url,
      token: await this.token(request),
      retry: { maxRetries: 3, baseDelayMs: 20, maxDelayMs: 200 },
      ...options,
    });
  }

  get recentLog(): string {
    return (this.server?.log ?? "").slice(-4000);
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    await this.model?.stop();
    this.server = undefined;
    this.model = undefined;
    for (const port of this.ports) taken.delete(port);
    this.ports = [];
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** Kills the processes at once and removes the data dir (exit and signal hooks). */
  killNow(): void {
    this.server?.killNow();
    this.model?.killNow();
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export const mnemo = new MnemoServer();
process.once("exit", () => mnemo.killNow());
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    mnemo.killNow();
    process.exit(130);
  });
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

/** A local HTTP server (in the port range) for stand-ins: failing proxies, a mock model. */
export async function localServer(handler: Handler): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    // No keep-alive: a later stand-in on the same port must not inherit the client's pooled sockets.
    res.setHeader("Connection", "close");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      Promise.resolve(handler(req, res, Buffer.concat(chunks))).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
        res.end(String(error));
      });
    });
  });
  const port = await listenInRange(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Forwards a request to mnemo and returns its answer (status, headers, body). */
export async function forward(
  req: IncomingMessage,
  body: Buffer,
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (typeof value === "string" && !["host", "connection", "content-length"].includes(key)) headers[key] = value;
  }
  const init: RequestInit = { method: req.method ?? "GET", headers };
  if (body.length > 0) init.body = new Uint8Array(body);
  const response = await fetch(mnemo.url + (req.url ?? "/"), init);
  const out: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    if (!["content-length", "connection", "transfer-encoding", "keep-alive"].includes(key)) out[key] = value;
  });
  return { status: response.status, headers: out, body: Buffer.from(await response.arrayBuffer()) };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}
