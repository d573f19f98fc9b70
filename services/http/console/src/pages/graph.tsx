// A subject's memory relations as a small SVG graph (nodes on a circle,
// typed edges as arrows), with the same edges as a list for screen
// readers and keyboards.
import type { Memory, Relation } from "@mnemo/client";

import { href } from "../router";
import { Badge } from "../ui";

const SIZE = 420;
const RADIUS = 150;

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

export function RelationGraph({ memories }: { memories: Memory[] }) {
  const byId = new Map(memories.map((m) => [m.id, m]));
  const edges = new Map<string, Relation>();
  for (const memory of memories) {
    for (const relation of memory.relations ?? []) {
      edges.set(`${relation.from}>${relation.to}>${relation.relation}`, relation);
    }
  }
  const relations = [...edges.values()].filter((r) => byId.has(r.from) && byId.has(r.to));
  if (relations.length === 0) {
    return (
      <section aria-labelledby="relations-heading">
        <h2 id="relations-heading">Relations</h2>
        <p class="muted">No relations between these memories (the LLM consolidator adds them).</p>
      </section>
    );
  }
  const nodeIds = [...new Set(relations.flatMap((r) => [r.from, r.to]))].slice(0, 24);
  const position = new Map(
    nodeIds.map((id, index) => {
      const angle = (2 * Math.PI * index) / nodeIds.length - Math.PI / 2;
      return [id, { x: SIZE / 2 + RADIUS * Math.cos(angle), y: SIZE / 2 + RADIUS * Math.sin(angle) }];
    }),
  );
  const label = (id: string) => truncate(byId.get(id)?.content ?? "(erased)", 28);
  return (
    <section aria-labelledby="relations-heading">
      <h2 id="relations-heading">Relations</h2>
      <div class="graph">
        <svg
          viewBox={`0 0 ${SIZE} ${SIZE}`}
          role="group"
          aria-label="Relations graph: each arrow goes from a memory to the one it relates to"
          aria-describedby="relations-list"
        >
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
              <path d="M0,0 L10,5 L0,10 z" class="arrow" />
            </marker>
          </defs>
          {relations.map((r) => {
            const a = position.get(r.from);
            const b = position.get(r.to);
            if (!a || !b) return null;
            const dx = b.x - a.x;
            const dy = b.y - a.y;
            const length = Math.hypot(dx, dy) || 1;
            const end = { x: b.x - (dx / length) * 12, y: b.y - (dy / length) * 12 };
            return (
              <g key={`${r.from}${r.to}${r.relation}`} class={`edge e-${r.relation}`}>
                <line x1={a.x} y1={a.y} x2={end.x} y2={end.y} marker-end="url(#arrow)" />
                <text x={(a.x + b.x) / 2} y={(a.y + b.y) / 2 - 4} text-anchor="middle">
                  {r.relation}
                </text>
              </g>
            );
          })}
          {nodeIds.map((id) => {
            const p = position.get(id)!;
            return (
              <a key={id} href={href.memory(id)} class="node">
                <circle cx={p.x} cy={p.y} r={9} />
                <text x={p.x} y={p.y + (p.y > SIZE / 2 ? 24 : -14)} text-anchor="middle">
                  {label(id)}
                </text>
              </a>
            );
          })}
        </svg>
        <ul id="relations-list" class="relations">
          {relations.map((r) => (
            <li key={`${r.from}${r.to}${r.relation}`}>
              <a href={href.memory(r.from)}>{label(r.from)}</a> <Badge value={r.relation} /> of{" "}
              <a href={href.memory(r.to)}>{label(r.to)}</a>{" "}
              <span class="muted">({Math.round(r.confidence * 100)}%)</span>
            </li>
          ))}
        </ul>
      </div>
    </section>
  );
}
