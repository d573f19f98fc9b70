// The console's small component set: loading and failure states, the
// scope gate that says why something is hidden, badges, times and diffs.
import { MnemoError } from "@mnemo/client";
import type { ComponentChildren } from "preact";
import { createContext } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";

import type { Piece } from "./diff";
import type { Claims } from "./session";

export const SessionContext = createContext<Claims | null>(null);

export function useClaims(): Claims {
  const claims = useContext(SessionContext);
  if (!claims) throw new Error("no session");
  return claims;
}

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change; the latest call wins. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const call = ++latest.current;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => call === latest.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => call === latest.current && setState({ data: undefined, error, loading: false }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { ...state, reload };
}

/** The scope a 403 names ("the token lacks the `audit:read` scope"). */
export function missingScope(error: unknown): string | null {
  if (!(error instanceof MnemoError) || error.status !== 403) return null;
  return /`([a-z]+:[a-z]+)`/.exec(error.message)?.[1] ?? null;
}

/** Whether the server has no such route (an endpoint this build lacks). */
export function notOffered(error: unknown): boolean {
  return error instanceof MnemoError && (error.code === "route_not_found" || error.code === "method_not_allowed");
}

/** An error said in words: what happened and what to do, never a dump. */
export function Failure({ error, what }: { error: unknown; what?: string }) {
  const claims = useContext(SessionContext);
  const prefix = what ? `${what}: ` : "";
  if (!(error instanceof MnemoError)) {
    return (
      <p class="notice error" role="alert">
        {prefix}
        {error instanceof Error ? error.message : String(error)}
      </p>
    );
  }
  const scope = missingScope(error);
  let text: string;
  if (scope) text = `hidden because your token lacks ${scope}.`;
  else if (error.code === "subject_forbidden")
    text = claims?.subject
      ? `your token is bound to subject ${claims.subject} and cannot see others.`
      : "your token cannot see this subject.";
  else if (error.status === 401) text = "the server refused the token (expired or not valid here): sign out and paste a new one.";
  else if (notOffered(error)) text = "this server does not offer it (an older mnemo build).";
  else if (error.status === 410) text = "the subject was erased: its content is gone for good.";
  else if (error.status === 404) text = "not found in this tenant.";
  else if (error.status === 0) text = `no answer from the server (${error.message}).`;
  else text = `${error.message} (${error.code}, HTTP ${error.status}).`;
  return (
    <p class={`notice ${scope || error.code === "subject_forbidden" ? "hidden-scope" : "error"}`} role="alert">
      {prefix}
      {text}
    </p>
  );
}

/** Shows `children` when the token carries `scope`; else says why not. */
export function Needs({ scope, what, children }: { scope: string; what: string; children: ComponentChildren }) {
  const claims = useClaims();
  if (!claims.scopes.has(scope)) {
    return (
      <p class="notice hidden-scope" role="note">
        {what} is hidden: your token lacks <code>{scope}</code>. Ask your administrator for a token with that scope
        (<code>mnemo token --scope {scope}</code>).
      </p>
    );
  }
  return <>{children}</>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** Data, its loading state or its failure. */
export function Loaded<T>({ state, what, children }: { state: Async<T>; what: string; children: (data: T) => ComponentChildren }) {
  if (state.error !== undefined) return <Failure error={state.error} what={what} />;
  if (state.data === undefined) return <Loading what={what} />;
  return <>{children(state.data)}</>;
}

export function Badge({ value, kind }: { value: string; kind?: string }) {
  return <span class={`badge ${kind ?? ""} v-${value.replace(/[^a-z_]/gi, "")}`}>{value}</span>;
}

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});

export function formatTime(value: string | number | Date): string {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : dateTime.format(date);
}

export function Time({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">—</span>;
  return (
    <time dateTime={value} title={value}>
      {formatTime(value)}
    </time>
  );
}

export function DiffText({ pieces }: { pieces: Piece[] }) {
  return (
    <span class="diff">
      {pieces.map((piece, index) =>
        piece.kind === "same" ? (
          <span key={index}>{piece.text}</span>
        ) : piece.kind === "added" ? (
          <ins key={index}>{piece.text}</ins>
        ) : (
          <del key={index}>{piece.text}</del>
        ),
      )}
    </span>
  );
}

export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

export function percent(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`;
}
