// The pasted token: kept in sessionStorage (gone with the tab, never shared
// with other tabs or written to disk as localStorage would be), and its
// claims read without verification, only to decide what to show. The API
// checks the signature and the scopes on every request.

const KEY = "mnemo.console.token";

export const SCOPES = [
  "memories:read",
  "memories:write",
  "memories:review",
  "audit:read",
  "gdpr:export",
  "gdpr:erase",
] as const;
export type Scope = (typeof SCOPES)[number];

export interface Claims {
  tenant: string | null;
  /** The actor recorded on the events the token causes. */
  sub: string | null;
  scopes: Set<string>;
  /** Set on a subject-bound token: the only subject it can see. */
  subject: string | null;
  /** Expiry, in seconds since the epoch. */
  exp: number | null;
}

function base64UrlDecode(segment: string): string {
  const base64 = segment.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
  const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** The token's claims, or `null` when it is not a JWT. */
export function readClaims(token: string): Claims | null {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts[1]) return null;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(base64UrlDecode(parts[1])) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof payload !== "object" || payload === null) return null;
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  const scope = payload["scope"];
  const names = typeof scope === "string" ? scope.split(/\s+/) : Array.isArray(scope) ? scope : [];
  return {
    tenant: text(payload["tenant"]),
    sub: text(payload["sub"]),
    scopes: new Set(names.filter((name): name is string => typeof name === "string" && name !== "")),
    subject: text(payload["subject"]),
    exp: typeof payload["exp"] === "number" ? payload["exp"] : null,
  };
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
