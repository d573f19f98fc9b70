/**
 * A random (version 4) UUID from the platform's Web Crypto API:
 * `crypto.randomUUID` where available (Node 20, browsers in secure
 * contexts), else built from `crypto.getRandomValues` (browsers on plain
 * http, where `randomUUID` is missing).
 */
export function randomId(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === "function") return c.randomUUID();
  if (typeof c?.getRandomValues !== "function") {
    throw new Error("no Web Crypto API (globalThis.crypto) to make message ids with");
  }
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
