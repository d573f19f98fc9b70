// One memory and why it is what it is: its current state, its version
// history as a timeline with word-level diffs, and its provenance (the
// messages it came from, the producer and the prompt version).
import type { AuditEvent, HistoryEntry, Memory, MemoryHistory } from "@mnemo/client";
import { MnemoError } from "@mnemo/client";

import { client } from "../api";
import { wordDiff } from "../diff";
import { href } from "../router";
import { Badge, DiffText, Loaded, Needs, Time, percent, shortId, useAsync, useClaims } from "../ui";

function Producer({ producer }: { producer: Memory["provenance"]["producer"] | null | undefined }) {
  if (!producer) return <span class="muted">unknown</span>;
  return (
    <span>
      {producer.strategy} {producer.version}
      {producer.model && <> · model {producer.model}</>}
      {producer.prompt_version && <> · prompt {producer.prompt_version}</>}
    </span>
  );
}

function Fields({ memory }: { memory: Memory }) {
  return (
    <dl class="fields">
      <div>
        <dt>Kind</dt>
        <dd>
          <Badge value={memory.kind} />
        </dd>
      </div>
      <div>
        <dt>State</dt>
        <dd>
          <Badge value={memory.state} kind="state" />
        </dd>
      </div>
      <div>
        <dt>Confidence</dt>
        <dd>{percent(memory.confidence)}</dd>
      </div>
      <div>
        <dt>Importance</dt>
        <dd>{percent(memory.importance)}</dd>
      </div>
      <div>
        <dt>Tags</dt>
        <dd>{memory.tags.length ? memory.tags.join(", ") : <span class="muted">none</span>}</dd>
      </div>
      <div>
        <dt>Producer</dt>
        <dd>
          <Producer producer={memory.provenance.producer} />
        </dd>
      </div>
      <div>
        <dt>Session / agent</dt>
        <dd>
          {memory.session ?? "—"} / {memory.agent ?? "—"}
        </dd>
      </div>
      <div>
        <dt>Reinforced</dt>
        <dd>{memory.reinforcements} times</dd>
      </div>
      <div>
        <dt>Created / updated</dt>
        <dd>
          <Time value={memory.created_at} /> / <Time value={memory.updated_at} />
        </dd>
      </div>
      {memory.superseded_by && (
        <div>
          <dt>Superseded by</dt>
          <dd>
            <a href={href.memory(memory.superseded_by)}>{shortId(memory.superseded_by)}</a>
          </dd>
        </div>
      )}
    </dl>
  );
}

/** The fields an event changed besides the content, in words. */
function otherChanges(entry: HistoryEntry, previous: Memory | null): string[] {
  const now = entry.memory;
  if (!now || !previous) return [];
  const said: string[] = [];
  if (now.state !== previous.state) said.push(`state ${previous.state} → ${now.state}`);
  if (now.kind !== previous.kind) said.push(`kind ${previous.kind} → ${now.kind}`);
  if (now.tags.join(",") !== previous.tags.join(",")) said.push(`tags [${previous.tags.join(", ")}] → [${now.tags.join(", ")}]`);
  if (now.confidence !== previous.confidence) said.push(`confidence ${percent(previous.confidence)} → ${percent(now.confidence)}`);
  if (now.importance !== previous.importance) said.push(`importance ${percent(previous.importance)} → ${percent(now.importance)}`);
  if (now.reinforcements !== previous.reinforcements) said.push(`reinforced ${now.reinforcements} times`);
  if (now.superseded_by && now.superseded_by !== previous.superseded_by) said.push(`superseded by ${shortId(now.superseded_by)}`);
  if (now.relations.length !== previous.relations.length) said.push(`${now.relations.length - previous.relations.length} relation(s) added`);
  return said;
}

function Timeline({ history }: { history: MemoryHistory }) {
  let previous: Memory | null = null;
  const items = history.versions.map((entry) => {
    const before = previous;
    if (entry.memory) previous = entry.memory;
    return { entry, before };
  });
  return (
    <ol class="timeline" aria-label="Versions, oldest first">
      {items.map(({ entry, before }) => {
        const content = entry.memory?.content ?? null;
        const earlier = before?.content ?? null;
        const others = otherChanges(entry, before);
        return (
          <li key={entry.event_id} class="version">
            <div class="when">
              <strong>v{entry.version}</strong> <Badge value={entry.event_type} kind="event" />
              <span>
                <Time value={entry.recorded_at} /> by <span class="actor">{entry.actor}</span>
              </span>
            </div>
            {entry.reason && <p class="reason">Reason: {entry.reason}</p>}
            {content !== null && earlier !== null && content !== earlier ? (
              <p class="content">
                <DiffText pieces={wordDiff(earlier, content)} />
              </p>
            ) : before === null && content !== null ? (
              <p class="content">{content}</p>
            ) : content === null && entry.memory ? (
              <p class="content muted">(content erased)</p>
            ) : null}
            {others.length > 0 && <p class="muted">{others.join(" · ")}</p>}
            <p class="meta muted">
              event {shortId(entry.event_id)}
              {entry.correlation_id && <> · request {shortId(entry.correlation_id)}</>}
              {entry.pii_found && Object.keys(entry.pii_found).length > 0 && (
                <>
                  {" "}
                  · PII scrubbed:{" "}
                  {Object.entries(entry.pii_found)
                    .map(([kind, n]) => `${kind} ${n}`)
                    .join(", ")}
                </>
              )}
            </p>
          </li>
        );
      })}
    </ol>
  );
}

function Sources({ memory }: { memory: Memory }) {
  const claims = useClaims();
  const ids = memory.provenance.source_event_ids;
  const messages = useAsync<Map<string, AuditEvent> | null>(async () => {
    if (!claims.scopes.has("audit:read") || ids.length === 0) return null;
    const wanted = new Set(ids);
    const found = new Map<string, AuditEvent>();
    let seen = 0;
    for await (const event of client.iterAudit({ subject: memory.subject, type: "MessageReceived", limit: 500 })) {
      if (wanted.has(event.event_id)) found.set(event.event_id, event);
      if (found.size === wanted.size || ++seen > 5000) break;
    }
    return found;
  }, [memory.id]);
  if (ids.length === 0) {
    return <p class="muted">A direct write through the API: no source messages.</p>;
  }
  return (
    <>
      <ul class="sources">
        {ids.map((id) => {
          const event = messages.data?.get(id);
          const payload = (event?.payload ?? {}) as { role?: string; content?: string | null };
          return (
            <li key={id}>
              <code>{id}</code>
              {event && (
                <>
                  {" "}
                  <Time value={event.recorded_at} /> <span class="muted">{payload.role ?? ""}:</span>{" "}
                  <q>{payload.content ?? "(erased)"}</q>
                </>
              )}
            </li>
          );
        })}
      </ul>
      <Needs scope="audit:read" what="The text of the source messages">
        {null}
      </Needs>
    </>
  );
}

export function MemoryPage({ id }: { id: string }) {
  const memory = useAsync<Memory | null>(
    () =>
      client.getMemory(id).catch((error: unknown) => {
        if (error instanceof MnemoError && error.status === 410) return null;
        throw error;
      }),
    [id],
  );
  const history = useAsync(() => client.memoryHistory(id), [id]);
  return (
    <>
      <Needs scope="memories:read" what="This memory">
        <Loaded state={memory} what="the memory">
          {(m) =>
            m ? (
              <>
                <p class="crumbs">
                  <a href={href.subject(m.subject)}>Subject {m.subject}</a> › memory {shortId(m.id)}
                </p>
                <h1 class="memory-content">{m.content ?? "(erased)"}</h1>
                <Fields memory={m} />
                <section aria-labelledby="provenance-heading">
                  <h2 id="provenance-heading">Provenance</h2>
                  <p>
                    Produced by <Producer producer={m.provenance.producer} />, from{" "}
                    {m.provenance.source_event_ids.length} source message(s):
                  </p>
                  <Sources memory={m} />
                </section>
              </>
            ) : (
              <>
                <h1>Memory {shortId(id)}</h1>
                <p class="notice">Its subject was erased: the content is gone for good; the history below remains.</p>
              </>
            )
          }
        </Loaded>
        <section aria-labelledby="history-heading">
          <h2 id="history-heading">Version history</h2>
          <Loaded state={history} what="the history">
            {(h) => <Timeline history={h} />}
          </Loaded>
        </section>
      </Needs>
    </>
  );
}
