// The review queue: candidates the consolidator held back, with the
// excerpt they came from and their confidence; approve, edit or reject.
// Keyboard: j/k (or arrows) move, a approves, e edits, r rejects; in the
// editor, Ctrl+Enter saves and Escape cancels.
import type { Review, ReviewResolution } from "@mnemo/client";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

import { client } from "../api";
import { href } from "../router";
import { Badge, Failure, Needs, Time, percent, useClaims } from "../ui";

type Decision = "approve" | "edit" | "reject";

function ReviewCard({
  review,
  selected,
  editing,
  busy,
  onSelect,
  onDecide,
  onEdit,
  onCancel,
}: {
  review: Review;
  selected: boolean;
  editing: boolean;
  busy: boolean;
  onSelect: () => void;
  onDecide: (decision: Decision, content?: string) => void;
  onEdit: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLLIElement>(null);
  const editor = useRef<HTMLTextAreaElement>(null);
  const [draft, setDraft] = useState(review.proposed);
  // Focus moves in the same frame as the change (layout effects, not
  // effects, which run after paint): a key typed right after j or e goes to
  // the card or editor now shown, not to the page.
  useLayoutEffect(() => {
    if (selected && !editing && ref.current && document.activeElement !== ref.current) {
      ref.current.focus();
    }
  }, [selected, editing]);
  useLayoutEffect(() => {
    if (editing) editor.current?.focus();
  }, [editing]);
  const titleId = `review-${review.id}`;
  return (
    <li
      ref={ref}
      class={`review ${selected ? "selected" : ""}`}
      tabIndex={selected ? 0 : -1}
      aria-labelledby={titleId}
      aria-current={selected ? "true" : undefined}
      onFocus={onSelect}
      onClick={onSelect}
    >
      <p id={titleId} class="proposed">
        <Badge value={review.kind} /> {review.proposed}
      </p>
      <p class="muted">
        Confidence <strong class="confidence">{percent(review.confidence)}</strong> · {review.action}
        {review.target && <> of <a href={href.memory(review.target)}>the target memory</a></>} · subject{" "}
        <a href={href.subject(review.subject)}>{review.subject}</a> · <Time value={review.requested_at} />
        {review.producer && ` · ${review.producer.strategy}${review.producer.model ? ` ${review.producer.model}` : ""}`}
      </p>
      {review.reason && (
        <p class="reason">
          Held: {review.reason_code ? <Badge value={review.reason_code} /> : null} {review.reason}
          {review.signals.length > 0 && <span class="muted"> (signals: {review.signals.join(", ")})</span>}
        </p>
      )}
      {review.excerpt && (
        <blockquote class="excerpt" aria-label="Excerpt of the source messages">
          {review.excerpt}
        </blockquote>
      )}
      {editing ? (
        <form
          class="edit"
          onSubmit={(e) => {
            e.preventDefault();
            onDecide("edit", draft);
          }}
        >
          <label for={`edit-${review.id}`}>Corrected content</label>
          <textarea
            id={`edit-${review.id}`}
            ref={editor}
            rows={3}
            value={draft}
            onInput={(e) => setDraft((e.currentTarget as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                e.preventDefault();
                onDecide("edit", draft);
              } else if (e.key === "Escape") {
                e.preventDefault();
                onCancel();
              }
              e.stopPropagation();
            }}
          />
          <div class="buttons">
            <button type="submit" class="primary" disabled={busy || !draft.trim()}>
              Save edit
            </button>
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <div class="buttons">
          <button type="button" class="primary" disabled={busy} onClick={() => onDecide("approve")}>
            Approve <kbd>a</kbd>
          </button>
          <button type="button" disabled={busy} onClick={onEdit}>
            Edit <kbd>e</kbd>
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => onDecide("reject")}>
            Reject <kbd>r</kbd>
          </button>
        </div>
      )}
    </li>
  );
}

function Queue() {
  const claims = useClaims();
  const [reviews, setReviews] = useState<Review[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [index, setIndex] = useState(0);
  const [editing, setEditing] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<{ text: string; memory: string | null } | null>(null);

  const load = async (after: string | null) => {
    try {
      const page = await client.listReviews({ limit: 50, cursor: after ?? undefined });
      setReviews((current) => (after ? [...(current ?? []), ...page.reviews] : page.reviews));
      setCursor(page.next_cursor);
    } catch (caught) {
      setError(caught);
    }
  };
  useEffect(() => {
    void load(null);
  }, []);

  const decide = async (review: Review, decision: Decision, content?: string) => {
    setBusy(true);
    try {
      const resolution: ReviewResolution = await client.resolveReview(
        review.id,
        decision === "edit" ? { decision, content: content ?? review.proposed } : { decision },
      );
      const done = { approve: "Approved", edit: "Edited and approved", reject: "Rejected" }[decision];
      setSaid({ text: `${done}: “${resolution.review.edited ?? review.proposed}”.`, memory: resolution.memory_id });
      setEditing(null);
      setReviews((current) => (current ?? []).filter((r) => r.id !== review.id));
      setIndex((i) => Math.max(0, Math.min(i, (reviews?.length ?? 1) - 2)));
    } catch (caught) {
      setSaid(null);
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  // The key handler is registered once and reads the state of the latest
  // render, so a key pressed right after another acts on what is shown.
  const live = useRef({ reviews, index, editing, busy });
  live.current = { reviews, index, editing, busy };
  const decideRef = useRef(decide);
  decideRef.current = decide;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const { reviews, index, editing, busy } = live.current;
      if (!reviews || reviews.length === 0 || editing || busy) return;
      const target = event.target as HTMLElement | null;
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const current = reviews[index];
      switch (event.key) {
        case "j":
        case "ArrowDown":
          setIndex(Math.min(reviews.length - 1, index + 1));
          break;
        case "k":
        case "ArrowUp":
          setIndex(Math.max(0, index - 1));
          break;
        case "a":
          if (current) void decideRef.current(current, "approve");
          break;
        case "e":
          if (current) setEditing(current.id);
          break;
        case "r":
          if (current) void decideRef.current(current, "reject");
          break;
        default:
          return;
      }
      event.preventDefault();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  return (
    <>
      <p class="muted" id="review-keys">
        Keys: <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>a</kbd> approve, <kbd>e</kbd> edit, <kbd>r</kbd> reject; in the
        editor <kbd>Ctrl</kbd>+<kbd>Enter</kbd> saves, <kbd>Esc</kbd> cancels.
        {claims.subject && ` Only reviews about ${claims.subject} (your token is bound to it).`}
      </p>
      <div aria-live="polite" class="said">
        {said && (
          <p class="notice ok">
            {said.text} {said.memory && <a href={href.memory(said.memory)}>Open the memory</a>}
          </p>
        )}
      </div>
      {error !== undefined && <Failure error={error} what="The review queue" />}
      {reviews === null ? (
        error === undefined && <p class="loading">Loading the queue…</p>
      ) : reviews.length === 0 ? (
        <p class="muted">The queue is empty.</p>
      ) : (
        <ol class="reviews" aria-describedby="review-keys" aria-label={`${reviews.length} pending reviews`}>
          {reviews.map((review, i) => (
            <ReviewCard
              key={review.id}
              review={review}
              selected={i === index}
              editing={editing === review.id}
              busy={busy}
              onSelect={() => setIndex(i)}
              onDecide={(decision, content) => void decide(review, decision, content)}
              onEdit={() => {
                setIndex(i);
                setEditing(review.id);
              }}
              onCancel={() => setEditing(null)}
            />
          ))}
        </ol>
      )}
      {cursor && (
        <button type="button" onClick={() => void load(cursor)}>
          Load more
        </button>
      )}
    </>
  );
}

export function ReviewPage() {
  return (
    <>
      <h1>Review queue</h1>
      <Needs scope="memories:review" what="The review queue">
        <Queue />
      </Needs>
    </>
  );
}
