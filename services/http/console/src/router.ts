// History routing under /console: the server answers the shell for every
// path below it, so each page has a URL that can be reloaded and shared.
import { useEffect, useState } from "preact/hooks";

export const BASE = "/console";

export type Route =
  | { page: "overview" }
  | { page: "subject"; subject: string }
  | { page: "memory"; id: string }
  | { page: "review" }
  | { page: "audit" }
  | { page: "erasures"; id: string | null }
  | { page: "not-found" };

export function parse(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rest.split("/").filter(Boolean).map(decodeURIComponent);
  const [first, second] = parts;
  if (parts.length === 0) return { page: "overview" };
  if (first === "subjects" && second && parts.length === 2) return { page: "subject", subject: second };
  if (first === "memories" && second && parts.length === 2) return { page: "memory", id: second };
  if (first === "review" && parts.length === 1) return { page: "review" };
  if (first === "audit" && parts.length === 1) return { page: "audit" };
  if (first === "erasures" && parts.length <= 2) return { page: "erasures", id: second ?? null };
  return { page: "not-found" };
}

export const href = {
  overview: () => BASE,
  subject: (subject: string) => `${BASE}/subjects/${encodeURIComponent(subject)}`,
  memory: (id: string) => `${BASE}/memories/${encodeURIComponent(id)}`,
  review: () => `${BASE}/review`,
  audit: (query?: Record<string, string>) =>
    `${BASE}/audit${query && Object.keys(query).length ? `?${new URLSearchParams(query)}` : ""}`,
  erasures: (id?: string, subject?: string) =>
    `${BASE}/erasures${id ? `/${encodeURIComponent(id)}` : ""}${subject ? `?${new URLSearchParams({ subject })}` : ""}`,
};

const CHANGED = "console:navigate";

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event(CHANGED));
}

/** The current location, re-rendering on navigation. */
export function useLocation(): { pathname: string; search: URLSearchParams } {
  const read = () => ({ pathname: location.pathname, search: new URLSearchParams(location.search) });
  const [current, setCurrent] = useState(read);
  useEffect(() => {
    const update = () => setCurrent(read());
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGED, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGED, update);
    };
  }, []);
  return current;
}

/** Same-origin links under /console navigate without a reload. */
export function interceptLinks(): void {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
      return;
    }
    const anchor = (event.target as Element | null)?.closest?.("a");
    if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
    const url = new URL(anchor.href, location.href);
    if (url.origin !== location.origin || !(url.pathname === BASE || url.pathname.startsWith(`${BASE}/`))) return;
    event.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}
