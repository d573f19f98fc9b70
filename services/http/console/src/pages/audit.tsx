// The tenant's audit timeline (the event log, opened): who did what and
// when, filterable by actor, event type, subject and time.
import type { AuditEvent } from "@mnemo/client";
import { useEffect, useRef, useState } from "preact/hooks";

import { client } from "../api";
import { href, navigate, useLocation } from "../router";
import { Badge, Failure, Needs, Time, shortId } from "../ui";

export const EVENT_TYPES = [
  "MessageReceived",
  "MemoryCreated",
  "MemoryRevised",
  "MemoryMerged",
  "MemorySuperseded",
  "MemoryReinforced",
  "MemoryArchived",
  "MemoryRestored",
  "MemoryDeleted",
  "RelationAdded",
  "ReviewRequested",
  "ReviewResolved",
  "ProfileUpdated",
  "BatchConsolidated",
  "ExportGenerated",
  "ConsolidationRequested",
  "ErasureRequested",
  "SubjectErased",
  "EpisodesForgotten",
];

interface Filters {
  actor: string;
  type: string;
  subject: string;
  from: string;
  to: string;
}

const FIELDS: (keyof Filters)[] = ["actor", "type", "subject", "from", "to"];

/** A `datetime-local` value as RFC 3339 (local time), or undefined. */
function instant(local: string): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** What an event says, in a line. */
function summary(event: AuditEvent): string {
  const payload = (event.payload ?? {}) as Record<string, unknown>;
  const text = (key: string) => (typeof payload[key] === "string" ? (payload[key] as string) : null);
  const content = text("content") ?? text("proposed") ?? text("summary");
  if (content) return content.length > 140 ? `${content.slice(0, 139)}…` : content;
  const reason = text("reason");
  return reason ?? "";
}

function link(event: AuditEvent) {
  const memory = /^memory-(.+)$/.exec(event.stream)?.[1];
  if (memory) return <a href={href.memory(memory)}>memory {shortId(memory)}</a>;
  const erasure = /^erasure-(.+)$/.exec(event.stream)?.[1];
  if (erasure) return <a href={href.erasures(erasure)}>erasure {shortId(erasure)}</a>;
  return <span class="muted">{event.stream}</span>;
}

function Timeline() {
  const { search } = useLocation();
  const applied: Filters = {
    actor: search.get("actor") ?? "",
    type: search.get("type") ?? "",
    subject: search.get("subject") ?? "",
    from: search.get("from") ?? "",
    to: search.get("to") ?? "",
  };
  const key = FIELDS.map((f) => applied[f]).join("|");
  const [draft, setDraft] = useState<Filters>(applied);
  // The events shown and the filters they answer: a page is drawn only
  // while its filters are the applied ones, so neither a slow answer to
  // an earlier filter (which could arrive after the later one) nor the
  // frame between a navigation and its reload shows rows that do not match.
  const [shown, setShown] = useState<{ key: string; events: AuditEvent[] } | null>(null);
  const [cursor, setCursor] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const current = useRef(key);
  current.current = key;
  const events = shown !== null && shown.key === key ? shown.events : null;

  const load = async (after: number | null) => {
    const asked = key;
    setError(undefined);
    try {
      const page = await client.listAudit({
        actor: applied.actor || undefined,
        type: applied.type || undefined,
        subject: applied.subject || undefined,
        from: instant(applied.from),
        to: instant(applied.to),
        limit: 100,
        cursor: after ?? undefined,
      });
      if (asked !== current.current) return;
      setShown((previous) => ({
        key: asked,
        events: after !== null && previous?.key === asked ? [...previous.events, ...page.events] : page.events,
      }));
      setCursor(page.next_cursor);
    } catch (caught) {
      if (asked !== current.current) return;
      setError(caught);
      if (after === null) setShown({ key: asked, events: [] });
    }
  };
  useEffect(() => {
    setDraft(applied);
    setCursor(null);
    void load(null);
  }, [key]);

  const apply = (event: Event) => {
    event.preventDefault();
    const query: Record<string, string> = {};
    for (const field of FIELDS) if (draft[field].trim()) query[field] = draft[field].trim();
    navigate(href.audit(query));
  };
  const input = (field: keyof Filters, label: string, when = false) => {
    const onInput = (e: Event) => setDraft({ ...draft, [field]: (e.currentTarget as HTMLInputElement).value });
    return (
      <div class="field">
        <label for={`audit-${field}`}>{label}</label>
        {when ? (
          <input id={`audit-${field}`} type="datetime-local" step={1} value={draft[field]} onInput={onInput} />
        ) : (
          <input id={`audit-${field}`} type="text" value={draft[field]} onInput={onInput} />
        )}
      </div>
    );
  };

  return (
    <>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        {input("actor", "Actor")}
        <div class="field">
          <label for="audit-type">Event type</label>
          <select
            id="audit-type"
            value={draft.type}
            onChange={(e) => setDraft({ ...draft, type: (e.currentTarget as HTMLSelectElement).value })}
          >
            <option value="">any</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        {input("subject", "Subject")}
        {input("from", "From", true)}
        {input("to", "To (before)", true)}
        <div class="buttons">
          <button type="submit" class="primary">
            Filter
          </button>
          <button type="button" onClick={() => navigate(href.audit())}>
            Clear
          </button>
        </div>
      </form>
      {error !== undefined && <Failure error={error} what="The audit timeline" />}
      {events === null ? (
        <p class="loading">Loading events…</p>
      ) : events.length === 0 ? (
        error === undefined && <p class="muted">No event matches.</p>
      ) : (
        <table class="audit">
          <caption class="sr-only">Events, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Recorded</th>
              <th scope="col">Event</th>
              <th scope="col">Actor</th>
              <th scope="col">Subject</th>
              <th scope="col">About</th>
              <th scope="col">What</th>
            </tr>
          </thead>
          <tbody>
            {events.map((event) => (
              <tr key={event.event_id}>
                <td>
                  <Time value={event.recorded_at} />
                </td>
                <td>
                  <Badge value={event.type} kind="event" />
                </td>
                <td>{event.actor}</td>
                <td>{event.subject ? <a href={href.subject(event.subject)}>{event.subject}</a> : "—"}</td>
                <td>{link(event)}</td>
                <td class="what">{summary(event)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor !== null && (
        <button type="button" onClick={() => void load(cursor)}>
          Load more
        </button>
      )}
    </>
  );
}

export function AuditPage() {
  return (
    <>
      <h1>Audit timeline</h1>
      <Needs scope="audit:read" what="The audit timeline">
        <Timeline />
      </Needs>
    </>
  );
}
