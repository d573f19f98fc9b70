// Erasures: start one (typed confirmation: the subject id), follow its
// receipt store by store until it completes, and list past ones. The
// verification (`mnemo verify-erasure`) is a command-line tool on the
// server's host: the API does not expose it, and the page says so.
import type { ErasureStatus } from "@mnemo/client";
import { useEffect, useState } from "preact/hooks";

import { client } from "../api";
import { href, navigate, useLocation } from "../router";
import { Failure, Loaded, Needs, Time, shortId, useAsync, useClaims } from "../ui";

/** The receipt's steps, in the order the forgetter takes them. */
const STEPS: [string, string][] = [
  ["subject_keys", "Data keys destroyed"],
  ["event_log", "Event log shredded"],
  ["bus", "Bus records shredded"],
  ["event_log_legacy", "Legacy fields redacted"],
  ["vector_index", "Vector points purged"],
  ["pipeline_state", "Pipeline state deleted"],
  ["memory_read_model", "Read model rows deleted"],
];

function Start() {
  const claims = useClaims();
  const { search } = useLocation();
  const [subject, setSubject] = useState(search.get("subject") ?? claims.subject ?? "");
  const [confirm, setConfirm] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const ready = subject.trim() !== "" && confirm === subject.trim();
  const start = async (event: Event) => {
    event.preventDefault();
    if (!ready) return;
    setBusy(true);
    setError(undefined);
    try {
      const accepted = await client.eraseSubject(subject.trim());
      navigate(href.erasures(accepted.erasure_id));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="start-heading">
      <h2 id="start-heading">Erase a subject</h2>
      <p>
        Erasure destroys the subject's data keys (the log keeps its events, unreadable for good) and deletes its
        memories, vectors and pipeline state. It cannot be undone.
      </p>
      <form class="erase" onSubmit={start}>
        <div class="field">
          <label for="erase-subject">Subject id</label>
          <input
            id="erase-subject"
            value={subject}
            autocomplete="off"
            onInput={(e) => setSubject((e.currentTarget as HTMLInputElement).value)}
          />
        </div>
        <div class="field">
          <label for="erase-confirm">Type the subject id again to confirm</label>
          <input
            id="erase-confirm"
            value={confirm}
            autocomplete="off"
            aria-describedby="erase-confirm-help"
            onInput={(e) => setConfirm((e.currentTarget as HTMLInputElement).value)}
          />
          <p id="erase-confirm-help" class="muted">
            {ready ? "Confirmed." : "The button unlocks when both ids match exactly."}
          </p>
        </div>
        <button type="submit" class="danger" disabled={!ready || busy}>
          {busy ? "Starting…" : `Erase ${subject.trim() || "subject"}`}
        </button>
      </form>
      {error !== undefined && <Failure error={error} what="The erasure" />}
    </section>
  );
}

function Receipt({ id }: { id: string }) {
  const [status, setStatus] = useState<ErasureStatus | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const current = await client.getErasure(id);
        if (stopped) return;
        setStatus(current);
        setError(undefined);
        if (current.status !== "completed") timer = setTimeout(() => void poll(), 1000);
      } catch (caught) {
        if (!stopped) setError(caught);
      }
    };
    void poll();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [id]);
  if (error !== undefined) return <Failure error={error} what="The receipt" />;
  if (!status) return <p class="loading">Loading the receipt…</p>;
  const receipt = status.receipt;
  const done = new Map((receipt?.steps ?? []).map((step) => [step.store, step]));
  return (
    <section aria-labelledby="receipt-heading">
      <h2 id="receipt-heading">
        Erasure of {status.subject ?? "(subject)"}:{" "}
        <span class={`status s-${status.status}`} role="status">
          {status.status}
        </span>
      </h2>
      <p class="muted">
        Erasure {id}, requested by {status.requested_by} <Time value={status.requested_at} />
        {receipt && (
          <>
            , completed <Time value={receipt.completed_at} />: {receipt.events_shredded} events shredded
          </>
        )}
        .
      </p>
      <ol class="steps">
        {STEPS.map(([store, label]) => {
          const step = done.get(store);
          return (
            <li key={store} class={step ? "done" : "pending"}>
              <span class="mark" aria-hidden="true">
                {step ? "✓" : "…"}
              </span>{" "}
              <strong>{label}</strong> <code>{store}</code>:{" "}
              {step ? (
                <>
                  {step.action} ({step.count}){step.note && <span class="note"> — {step.note}</span>}
                </>
              ) : (
                <span class="muted">{status.status === "completed" ? "not part of this receipt" : "pending"}</span>
              )}
            </li>
          );
        })}
        {(receipt?.steps ?? [])
          .filter((step) => !STEPS.some(([store]) => store === step.store))
          .map((step) => (
            <li key={step.store} class="done">
              <span class="mark" aria-hidden="true">
                ✓
              </span>{" "}
              <code>{step.store}</code>: {step.action} ({step.count}){step.note && <> — {step.note}</>}
            </li>
          ))}
      </ol>
      <p class="notice" role="note">
        Verifying an erasure from the outside is a command-line tool, not part of the API: on the server's host, run{" "}
        <code>
          mnemo verify-erasure --subject {status.subject ?? "SUBJECT"} --tenant {receipt?.tenant ?? "TENANT"}
        </code>{" "}
        (add <code>--canary TEXT</code> for known content). It reads the stores with the master key, so the console
        cannot run it.
      </p>
    </section>
  );
}

function Past() {
  const events = useAsync(() => client.listAudit({ type: "ErasureRequested", limit: 100 }), []);
  return (
    <section aria-labelledby="past-heading">
      <h2 id="past-heading">Past erasures</h2>
      <Needs scope="audit:read" what="The list of past erasures">
        <Loaded state={events} what="past erasures">
          {(page) =>
            page.events.length === 0 ? (
              <p class="muted">None yet.</p>
            ) : (
              <ul>
                {page.events.map((event) => {
                  const id = event.stream.replace(/^erasure-/, "");
                  return (
                    <li key={event.event_id}>
                      <a href={href.erasures(id)}>Erasure {shortId(id)}</a> of {event.subject ?? "?"} by {event.actor},{" "}
                      <Time value={event.recorded_at} />
                    </li>
                  );
                })}
              </ul>
            )
          }
        </Loaded>
      </Needs>
    </section>
  );
}

export function ErasuresPage({ id }: { id: string | null }) {
  return (
    <>
      <h1>Erasures</h1>
      <Needs scope="gdpr:erase" what="The erasures page">
        {id ? <Receipt id={id} /> : <Start />}
        <Past />
      </Needs>
    </>
  );
}
