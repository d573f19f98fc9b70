// The tenant at a glance: its subjects (searchable by id prefix, paged),
// the review backlog and what consolidation cost.
import type { ConsolidationReport, ReviewStats } from "@mnemo/client";
import { useState } from "preact/hooks";

import type { SubjectSummary } from "../api";
import { client, listSubjects } from "../api";
import { href, navigate } from "../router";
import { Loaded, Needs, Time, notOffered, percent, useAsync, useClaims } from "../ui";

const PAGE = 25;

function OpenSubject() {
  const [value, setValue] = useState("");
  return (
    <form
      class="inline"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim()) navigate(href.subject(value.trim()));
      }}
    >
      <label for="open-subject">Open a subject by id</label>
      <input id="open-subject" value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
      <button type="submit">Open</button>
    </form>
  );
}

function Subjects() {
  const [prefix, setPrefix] = useState("");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const page = useAsync(() => listSubjects({ prefix, limit: PAGE, cursor }), [prefix, cursor]);
  return (
    <section aria-labelledby="subjects-heading">
      <h2 id="subjects-heading">Subjects</h2>
      <div class="toolbar">
        <label for="subject-prefix">Search by id prefix</label>
        <input
          id="subject-prefix"
          type="search"
          value={prefix}
          onInput={(e) => {
            setPrefix((e.currentTarget as HTMLInputElement).value.trim());
            setCursors([null]);
          }}
        />
        <OpenSubject />
      </div>
      {page.error !== undefined && notOffered(page.error) ? (
        <p class="notice">This server cannot list subjects yet (no <code>GET /v1/subjects</code>): open one by its id.</p>
      ) : (
        <Loaded state={page} what="subjects">
          {(data) => (
            <>
              <SubjectTable items={data.items} />
              <div class="pager">
                <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
                  Previous
                </button>
                <span class="muted">Page {cursors.length}</span>
                <button
                  type="button"
                  disabled={!data.next_cursor}
                  onClick={() => data.next_cursor && setCursors([...cursors, data.next_cursor])}
                >
                  Next
                </button>
              </div>
            </>
          )}
        </Loaded>
      )}
    </section>
  );
}

function SubjectTable({ items }: { items: SubjectSummary[] }) {
  if (items.length === 0) return <p class="muted">No subject matches.</p>;
  const total = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);
  return (
    <table>
      <caption class="sr-only">Subjects with their memory counts by state</caption>
      <thead>
        <tr>
          <th scope="col">Subject</th>
          <th scope="col">Memories</th>
          <th scope="col">By state</th>
          <th scope="col">Last activity</th>
        </tr>
      </thead>
      <tbody>
        {items.map((item) => (
          <tr key={item.subject}>
            <th scope="row">
              <a href={href.subject(item.subject)}>{item.subject}</a>
            </th>
            <td class="num">{total(item.memories)}</td>
            <td>
              {Object.entries(item.memories)
                .filter(([, n]) => n > 0)
                .map(([state, n]) => `${state} ${n}`)
                .join(" · ") || "—"}
            </td>
            <td>
              <Time value={item.last_activity} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Backlog() {
  const stats = useAsync(() => client.reviewStats({ days: 30 }), []);
  return (
    <section aria-labelledby="backlog-heading">
      <h2 id="backlog-heading">Review backlog</h2>
      <Needs scope="memories:review" what="The review backlog">
        <Loaded state={stats} what="review statistics">
          {(s: ReviewStats) => (
            <dl class="stats">
              <div>
                <dt>Pending now</dt>
                <dd>
                  <a href={href.review()}>{s.reviews.pending}</a>
                </dd>
              </div>
              <div>
                <dt>Decided (30 days)</dt>
                <dd>{s.reviews.total_decided}</dd>
              </div>
              <div>
                <dt>Accepted</dt>
                <dd>{percent(s.reviews.acceptance_rate)}</dd>
              </div>
              <div>
                <dt>Candidates</dt>
                <dd>{s.candidates}</dd>
              </div>
              <div>
                <dt>Suspected injections</dt>
                <dd>{s.suspected_injections}</dd>
              </div>
              <div>
                <dt>Thresholds (auto / review)</dt>
                <dd>
                  {s.thresholds.auto} / {s.thresholds.review}
                </dd>
              </div>
            </dl>
          )}
        </Loaded>
      </Needs>
    </section>
  );
}

function Cost() {
  const report = useAsync(() => client.consolidationReport({ days: 30 }), []);
  const money = (n: number | undefined) => (n === undefined ? "—" : n.toFixed(4));
  return (
    <section aria-labelledby="cost-heading">
      <h2 id="cost-heading">Consolidation cost (30 days)</h2>
      <Needs scope="audit:read" what="The consolidation cost report">
        <Loaded state={report} what="the cost report">
          {(r: ConsolidationReport) => {
            const totals = r.report.totals;
            const days = Object.entries(r.report.by_day ?? {}).sort(([a], [b]) => b.localeCompare(a)).slice(0, 7);
            return (
              <>
                <dl class="stats">
                  <div>
                    <dt>Batches</dt>
                    <dd>{totals?.batches ?? 0}</dd>
                  </div>
                  <div>
                    <dt>Messages</dt>
                    <dd>{totals?.messages ?? 0}</dd>
                  </div>
                  <div>
                    <dt>LLM calls</dt>
                    <dd>{totals?.llm_calls ?? 0}</dd>
                  </div>
                  <div>
                    <dt>Tokens (prompt / completion)</dt>
                    <dd>
                      {totals?.prompt_tokens ?? 0} / {totals?.completion_tokens ?? 0}
                    </dd>
                  </div>
                  <div>
                    <dt>Estimated cost</dt>
                    <dd>{money(totals?.estimated_cost)}</dd>
                  </div>
                  <div>
                    <dt>Per 100 messages</dt>
                    <dd>{r.report.per_100_messages ? money(r.report.per_100_messages.estimated_cost) : "—"}</dd>
                  </div>
                </dl>
                {days.length > 0 && (
                  <table>
                    <caption>Last days</caption>
                    <thead>
                      <tr>
                        <th scope="col">Day (UTC)</th>
                        <th scope="col">Batches</th>
                        <th scope="col">Messages</th>
                        <th scope="col">LLM calls</th>
                        <th scope="col">Cost</th>
                      </tr>
                    </thead>
                    <tbody>
                      {days.map(([day, t]) => (
                        <tr key={day}>
                          <th scope="row">{day}</th>
                          <td class="num">{t.batches}</td>
                          <td class="num">{t.messages}</td>
                          <td class="num">{t.llm_calls}</td>
                          <td class="num">{money(t.estimated_cost)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                )}
              </>
            );
          }}
        </Loaded>
      </Needs>
    </section>
  );
}

export function OverviewPage() {
  const claims = useClaims();
  return (
    <>
      <h1>Tenant {claims.tenant}</h1>
      {claims.subject ? (
        <section aria-labelledby="subjects-heading">
          <h2 id="subjects-heading">Subjects</h2>
          <p class="notice hidden-scope" role="note">
            Your token is bound to subject <code>{claims.subject}</code>: it sees that subject only, so the tenant's
            subject list is hidden. <a href={href.subject(claims.subject)}>Open {claims.subject}</a>.
          </p>
        </section>
      ) : claims.scopes.has("memories:read") ? (
        <Subjects />
      ) : (
        <Needs scope="memories:read" what="The subject list">
          {null}
        </Needs>
      )}
      <div class="columns">
        <Backlog />
        <Cost />
      </div>
    </>
  );
}

