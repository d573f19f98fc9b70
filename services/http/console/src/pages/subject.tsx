// One subject: its profile, its memories by state and kind, their
// relations as a graph, time travel (the memories as of a date and what
// changed since), and search and context tried live.
import type { ContextResponse, Memory, Profile, SearchResults } from "@mnemo/client";
import { MnemoError } from "@mnemo/client";
import { useEffect, useMemo, useState } from "preact/hooks";

import type { Change, MemoryAsOf } from "../api";
import { allMemories, changes, client, memoriesAsOf } from "../api";
import { wordDiff } from "../diff";
import { href } from "../router";
import {
  Badge,
  DiffText,
  Failure,
  Loaded,
  Needs,
  Time,
  formatTime,
  notOffered,
  percent,
  shortId,
  useAsync,
  useClaims,
} from "../ui";
import { RelationGraph } from "./graph";

const STATES = ["active", "pending_review", "archived", "superseded", "deleted"] as const;
const KINDS = ["fact", "preference", "decision", "rule", "status"] as const;

function ProfileSection({ subject }: { subject: string }) {
  const profile = useAsync<Profile | null>(
    () =>
      client.profile(subject).catch((error: unknown) => {
        if (error instanceof MnemoError && error.status === 404 && error.code !== "route_not_found") return null;
        throw error;
      }),
    [subject],
  );
  return (
    <section aria-labelledby="profile-heading">
      <h2 id="profile-heading">Profile</h2>
      <Loaded state={profile} what="the profile">
        {(p) =>
          p ? (
            <div class="card">
              <p>{p.summary}</p>
              <p class="muted">
                Version {p.version}, updated <Time value={p.updated_at} />, folds in {p.memory_ids.length} memories
                {p.producer ? `, by ${p.producer.strategy}${p.producer.model ? ` (${p.producer.model})` : ""}` : ""}.
              </p>
            </div>
          ) : (
            <p class="muted">No profile yet (the consolidator writes one once it has memories to summarise).</p>
          )
        }
      </Loaded>
    </section>
  );
}

function MemoryRow({ memory }: { memory: Memory }) {
  return (
    <tr>
      <td>
        <a href={href.memory(memory.id)}>{memory.content ?? "(erased)"}</a>
      </td>
      <td>
        <Badge value={memory.kind} />
      </td>
      <td>
        <Badge value={memory.state} kind="state" />
      </td>
      <td class="num">{percent(memory.confidence)}</td>
      <td class="num">v{memory.version}</td>
      <td>
        <Time value={memory.updated_at} />
      </td>
    </tr>
  );
}

function Memories({ memories }: { memories: Memory[] }) {
  const [state, setState] = useState<string>("active");
  const [kind, setKind] = useState<string>("");
  const count = (s: string, k?: string) => memories.filter((m) => m.state === s && (!k || m.kind === k)).length;
  const shown = memories.filter((m) => (!state || m.state === state) && (!kind || m.kind === kind));
  return (
    <section aria-labelledby="memories-heading">
      <h2 id="memories-heading">Memories by state and kind</h2>
      <table class="matrix">
        <caption class="sr-only">Memory counts: states in rows, kinds in columns</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            {KINDS.map((k) => (
              <th scope="col" key={k}>
                {k}
              </th>
            ))}
            <th scope="col">All</th>
          </tr>
        </thead>
        <tbody>
          {STATES.map((s) => (
            <tr key={s}>
              <th scope="row">{s}</th>
              {KINDS.map((k) => (
                <td class="num" key={k}>
                  {count(s, k) || <span class="muted">0</span>}
                </td>
              ))}
              <td class="num">{count(s)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="toolbar">
        <label for="memory-state">State</label>
        <select id="memory-state" value={state} onChange={(e) => setState((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">all</option>
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s} ({count(s)})
            </option>
          ))}
        </select>
        <label for="memory-kind">Kind</label>
        <select id="memory-kind" value={kind} onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">all</option>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </div>
      {shown.length === 0 ? (
        <p class="muted">No memory in this selection.</p>
      ) : (
        <table class="memories">
          <caption class="sr-only">Memories</caption>
          <thead>
            <tr>
              <th scope="col">Content</th>
              <th scope="col">Kind</th>
              <th scope="col">State</th>
              <th scope="col">Confidence</th>
              <th scope="col">Version</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((m) => (
              <MemoryRow key={m.id} memory={m} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The seconds of an instant, for the slider. */
const seconds = (value: string | number | Date) => Math.floor(new Date(value).getTime() / 1000);
const iso = (secs: number) => new Date(secs * 1000).toISOString();

function asOfUnsupported(error: unknown): boolean {
  return notOffered(error) || (error instanceof MnemoError && error.status === 400 && /as_of/.test(error.message));
}

function ChangeItem({ change }: { change: Change }) {
  const before = change.before?.content ?? null;
  const after = change.after?.content ?? null;
  return (
    <li>
      <Badge value={change.change} kind="change" /> <Time value={change.at} /> by {change.actor}
      {change.producer && (
        <span class="muted">
          {" "}
          ({change.producer.strategy}
          {change.producer.model ? `, ${change.producer.model}` : ""}
          {change.producer.prompt_version ? `, prompt ${change.producer.prompt_version}` : ""})
        </span>
      )}
      {": "}
      {change.memory_id ? (
        <a href={href.memory(change.memory_id)}>
          {before !== null && after !== null && before !== after ? (
            <DiffText pieces={wordDiff(before, after)} />
          ) : (
            (after ?? before ?? shortId(change.memory_id))
          )}
        </a>
      ) : (
        <span>{before ?? after ?? "a rejected proposal"}</span>
      )}
      {change.reason && <span class="muted"> — {change.reason}</span>}
    </li>
  );
}

function TimeTravel({ subject, memories }: { subject: string; memories: Memory[] }) {
  const claims = useClaims();
  const now = useMemo(() => seconds(Date.now()), []);
  const firstAudit = useAsync(
    () =>
      claims.scopes.has("audit:read")
        ? client.listAudit({ subject, limit: 1 }).then((page) => page.events[0]?.recorded_at ?? null)
        : Promise.resolve(null),
    [subject],
  );
  const first = useMemo(() => {
    const candidates = memories.map((m) => seconds(m.created_at));
    if (firstAudit.data) candidates.push(seconds(firstAudit.data));
    return candidates.length ? Math.min(...candidates, now) : now - 86_400;
  }, [memories, firstAudit.data, now]);
  const [at, setAt] = useState<number>(now);
  const [settled, setSettled] = useState<number>(now);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(at), 250);
    return () => clearTimeout(timer);
  }, [at]);
  const past = useAsync<{ memories: MemoryAsOf[]; changes: Change[] | null } | null>(async () => {
    if (settled >= now) return null;
    const [state, changed] = await Promise.all([
      memoriesAsOf(subject, iso(settled), "active,pending_review,archived,superseded"),
      changes(subject, iso(settled), iso(now)).catch((error: unknown) => {
        if (notOffered(error)) return null;
        throw error;
      }),
    ]);
    return { memories: state, changes: changed };
  }, [subject, settled]);

  const localValue = (secs: number) => {
    const date = new Date(secs * 1000);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(
      date.getMinutes(),
    )}:${pad(date.getSeconds())}`;
  };
  const clamp = (secs: number) => Math.min(now, Math.max(first - 1, secs));

  return (
    <section aria-labelledby="time-travel-heading" class="time-travel">
      <h2 id="time-travel-heading">Time travel</h2>
      <p class="muted">
        What was believed about {subject} at a moment, from the event log, and what changed between then and now.
      </p>
      <div class="slider">
        <label for="as-of-slider">As of</label>
        <input
          id="as-of-slider"
          type="range"
          min={first - 1}
          max={now}
          step={1}
          value={at}
          aria-valuetext={formatTime(at * 1000)}
          onInput={(e) => setAt(clamp(Number((e.currentTarget as HTMLInputElement).value)))}
        />
        <label for="as-of-time" class="sr-only">
          As of (date and time)
        </label>
        <input
          id="as-of-time"
          type="datetime-local"
          step={1}
          value={localValue(at)}
          onChange={(e) => {
            const parsed = new Date((e.currentTarget as HTMLInputElement).value);
            if (!Number.isNaN(parsed.getTime())) setAt(clamp(seconds(parsed)));
          }}
        />
        <button type="button" onClick={() => setAt(now)} disabled={at >= now}>
          Now
        </button>
      </div>
      <p class="range muted">
        From the first event (<Time value={iso(first)} />) to now (<Time value={iso(now)} />).
      </p>
      <div aria-live="polite">
        {settled >= now ? (
          <p class="muted">Move the slider back to see an earlier state.</p>
        ) : past.error !== undefined ? (
          asOfUnsupported(past.error) ? (
            <p class="notice">
              This server cannot answer for a past date yet (no <code>as_of</code> on the memory list): time travel needs a
              newer mnemo build.
            </p>
          ) : (
            <Failure error={past.error} what="The state at that date" />
          )
        ) : past.data === undefined || past.loading ? (
          <p class="loading" role="status">
            Reading the log as of {formatTime(settled * 1000)}…
          </p>
        ) : past.data ? (
          <div class="columns">
            <div>
              <h3 id="as-of-heading">
                As of <Time value={iso(settled)} />: {past.data.memories.length} memories
              </h3>
              {past.data.memories.length === 0 ? (
                <p class="muted">Nothing was known about {subject} yet.</p>
              ) : (
                <ul class="as-of-list" aria-labelledby="as-of-heading">
                  {past.data.memories.map((m) => (
                    <li key={m.id}>
                      <Badge value={m.state} kind="state" /> <Badge value={m.kind} />{" "}
                      <a href={href.memory(m.id)}>{m.content ?? "(erased)"}</a>
                      {m.as_of && (
                        <span class="muted">
                          {" "}
                          — {m.as_of.event.type} by {m.as_of.event.actor}, <Time value={m.as_of.event.recorded_at} />
                          {m.as_of.event.reason ? `: ${m.as_of.event.reason}` : ""}
                        </span>
                      )}
                    </li>
                  ))}
                </ul>
              )}
            </div>
            <div>
              <h3 id="since-heading">Changed since then</h3>
              {past.data.changes === null ? (
                <p class="notice">This server does not list changes (no <code>…/changes</code>).</p>
              ) : past.data.changes.length === 0 ? (
                <p class="muted">Nothing changed since.</p>
              ) : (
                <ol class="changes" aria-labelledby="since-heading">
                  {past.data.changes.map((c, index) => (
                    <ChangeItem key={`${c.event_id}-${c.memory_id ?? index}`} change={c} />
                  ))}
                </ol>
              )}
            </div>
          </div>
        ) : null}
      </div>
    </section>
  );
}

function TryIt({ subject }: { subject: string }) {
  const [query, setQuery] = useState("");
  const [include, setInclude] = useState<"memories" | "episodes" | "both">("both");
  const [budget, setBudget] = useState(300);
  const [results, setResults] = useState<{ search: SearchResults; context: ContextResponse } | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (event: Event) => {
    event.preventDefault();
    if (!query.trim()) return;
    setBusy(true);
    setError(undefined);
    try {
      const includes: ("memories" | "episodes")[] = include === "both" ? ["memories", "episodes"] : [include];
      const [search, context] = await Promise.all([
        client.search(subject, { query, k: 10, include: includes, window: include === "memories" ? 0 : 1 }),
        client.context(subject, { messages: [{ role: "user", content: query }], token_budget: budget }),
      ]);
      setResults({ search, context });
    } catch (caught) {
      setError(caught);
      setResults(null);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="try-heading">
      <h2 id="try-heading">Search and context, live</h2>
      <form class="toolbar" onSubmit={run}>
        <label for="try-query">Query</label>
        <input
          id="try-query"
          type="search"
          value={query}
          onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)}
        />
        <label for="try-include">Search</label>
        <select
          id="try-include"
          value={include}
          onChange={(e) => setInclude((e.currentTarget as HTMLSelectElement).value as typeof include)}
        >
          <option value="both">memories and episodes</option>
          <option value="memories">memories</option>
          <option value="episodes">episodes</option>
        </select>
        <label for="try-budget">Context budget (tokens)</label>
        <input
          id="try-budget"
          type="number"
          min={16}
          max={8000}
          value={budget}
          onInput={(e) => setBudget(Number((e.currentTarget as HTMLInputElement).value) || 300)}
        />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Searching…" : "Try"}
        </button>
      </form>
      {error !== undefined && <Failure error={error} what="Search" />}
      {results && (
        <div class="columns">
          <div>
            <h3>Search results</h3>
            {results.search.results.length === 0 ? (
              <p class="muted">Nothing found.</p>
            ) : (
              <ol class="results">
                {results.search.results.map((r, index) => (
                  <li key={index}>
                    {r.type === "memory" && r.memory ? (
                      <>
                        <Badge value="memory" /> <a href={href.memory(r.memory.id)}>{r.memory.content}</a>
                      </>
                    ) : r.episode ? (
                      <>
                        <Badge value="episode" /> <span class="muted">{r.episode.role}:</span> {r.episode.content}{" "}
                        <span class="muted">
                          (<Time value={r.episode.timestamp} />)
                        </span>
                      </>
                    ) : null}{" "}
                    <span class="muted">score {r.score.toFixed(3)}</span>
                    {r.via && <span class="muted"> · {r.via.relation} of {shortId(r.via.of)}</span>}
                  </li>
                ))}
              </ol>
            )}
          </div>
          <div>
            <h3>
              Context block ({results.context.tokens} tokens of {budget})
            </h3>
            {results.context.block ? <pre class="block">{results.context.block}</pre> : <p class="muted">Empty.</p>}
          </div>
        </div>
      )}
    </section>
  );
}

export function SubjectPage({ subject }: { subject: string }) {
  const claims = useClaims();
  const memories = useAsync(() => allMemories(subject), [subject]);
  if (claims.subject && claims.subject !== subject) {
    return (
      <>
        <h1>Subject {subject}</h1>
        <p class="notice hidden-scope" role="note">
          Hidden: your token is bound to subject <code>{claims.subject}</code> and cannot see <code>{subject}</code>.{" "}
          <a href={href.subject(claims.subject)}>Open {claims.subject}</a>.
        </p>
      </>
    );
  }
  return (
    <>
      <h1>Subject {subject}</h1>
      <p class="actions">
        {claims.scopes.has("audit:read") && <a href={href.audit({ subject })}>Audit timeline of {subject}</a>}
        {claims.scopes.has("gdpr:erase") && <a href={href.erasures(undefined, subject)}>Erase {subject}…</a>}
      </p>
      <Needs scope="memories:read" what="This subject's memories">
        <Loaded state={memories} what="memories">
          {(list) => (
            <>
              <TimeTravel subject={subject} memories={list} />
              <Memories memories={list} />
              <RelationGraph memories={list} />
            </>
          )}
        </Loaded>
        <ProfileSection subject={subject} />
        <TryIt subject={subject} />
      </Needs>
    </>
  );
}
