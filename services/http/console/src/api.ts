// The console's access to the API: the TypeScript SDK (`@mnemo/client`,
// compiled from its sources) aimed at this origin, plus a small wrapper for
// the time-travel and subject-list endpoints the SDK has types but no
// methods for yet (`as_of`, `…/changes`, `GET /v1/subjects`).
import {
  MnemoAuthError,
  MnemoClient,
  MnemoConflictError,
  MnemoError,
  MnemoGoneError,
  MnemoNotFoundError,
  MnemoRateLimitError,
  MnemoServerError,
  MnemoValidationError,
} from "@mnemo/client";
import type { Memory, components } from "@mnemo/client";

import { storedToken } from "./session";

export const client = new MnemoClient({
  baseUrl: location.origin,
  token: () => storedToken() ?? "",
  timeoutMs: 20_000,
});

type Schemas = components["schemas"];

/** A memory as it was at an instant, with the event it stands on (`as_of`). */
export type MemoryAsOf = Schemas["MemoryAsOf"];
export type ProfileAsOf = Schemas["ProfileAsOf"];
/** One change to one of a subject's memories, with the memory before and after. */
export type Change = Schemas["Change"];
export type ChangePage = Schemas["ChangePage"];
export type SubjectSummary = Schemas["SubjectSummary"];
export type SubjectPage = Schemas["SubjectPage"];

type Query = Record<string, string | number | undefined | null>;

function errorFor(status: number, code: string, message: string, endpoint: string): MnemoError {
  const init = { status, code, message, endpoint };
  if (status === 401 || status === 403) return new MnemoAuthError(init);
  if (status === 404) return new MnemoNotFoundError(init);
  if (status === 409) return new MnemoConflictError(init);
  if (status === 410) return new MnemoGoneError(init);
  if (status === 429) return new MnemoRateLimitError(init);
  if (status === 400 || status === 422) return new MnemoValidationError(init);
  if (status >= 500) return new MnemoServerError(init);
  return new MnemoError(init);
}

/** A GET of the API with the session's token, errors as the SDK's. */
async function get<T>(path: string, query: Query = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.append(key, String(value));
  }
  const qs = params.toString();
  const endpoint = `GET ${path}`;
  let response: Response;
  try {
    response = await fetch(qs ? `${path}?${qs}` : path, {
      headers: { Accept: "application/json", Authorization: `Bearer ${storedToken() ?? ""}` },
    });
  } catch (cause) {
    throw new MnemoError({ status: 0, code: "network_error", message: String(cause), endpoint });
  }
  const text = await response.text();
  if (!response.ok) {
    let code = `http_${response.status}`;
    let message = response.statusText;
    try {
      const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch {
      // not mnemo's error body: keep the status
    }
    throw errorFor(response.status, code, message, endpoint);
  }
  return JSON.parse(text) as T;
}

const seg = encodeURIComponent;

/** GET /v1/subjects: the tenant's subjects, paged, by id prefix. */
export function listSubjects(query: { prefix?: string; limit?: number; cursor?: string | null }): Promise<SubjectPage> {
  return get<SubjectPage>("/v1/subjects", query);
}

/** GET /v1/subjects/{s}/memories?as_of=T: the subject's memories as they were at T. */
export async function memoriesAsOf(subject: string, at: string, state?: string): Promise<MemoryAsOf[]> {
  const memories: MemoryAsOf[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 20; page++) {
    const body: { memories: MemoryAsOf[]; next_cursor: string | null } = await get(
      `/v1/subjects/${seg(subject)}/memories`,
      { as_of: at, limit: 500, cursor, state },
    );
    memories.push(...body.memories);
    if (!body.next_cursor || body.next_cursor === cursor) break;
    cursor = body.next_cursor;
  }
  return memories;
}

/** GET /v1/memories/{id}?as_of=T. */
export function memoryAsOf(id: string, at: string): Promise<MemoryAsOf> {
  return get<MemoryAsOf>(`/v1/memories/${seg(id)}`, { as_of: at });
}

/** GET /v1/subjects/{s}/profile?as_of=T. */
export function profileAsOf(subject: string, at: string): Promise<ProfileAsOf> {
  return get<ProfileAsOf>(`/v1/subjects/${seg(subject)}/profile`, { as_of: at });
}

/** GET /v1/subjects/{s}/changes?from&to: every change between two instants, following the pages. */
export async function changes(subject: string, from: string, to: string, max = 1000): Promise<Change[]> {
  const items: Change[] = [];
  let cursor: string | null = null;
  while (items.length < max) {
    const page: ChangePage = await get(`/v1/subjects/${seg(subject)}/changes`, {
      from,
      to,
      limit: 200,
      cursor,
    });
    items.push(...page.items);
    if (!page.next_cursor || page.next_cursor === cursor) break;
    cursor = page.next_cursor;
  }
  return items;
}

/** Every memory of a subject (all states), up to `max`. */
export async function allMemories(subject: string, max = 2000): Promise<Memory[]> {
  const memories: Memory[] = [];
  for await (const memory of client.iterMemories(subject, {
    state: "active,pending_review,archived,superseded,deleted",
    limit: 500,
  })) {
    memories.push(memory);
    if (memories.length >= max) break;
  }
  return memories;
}
