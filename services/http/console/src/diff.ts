// Word-level diff of two texts (longest common subsequence of their words
// and the spaces between), for a memory's versions.

export type Piece = { kind: "same" | "added" | "removed"; text: string };

function words(text: string): string[] {
  return text.split(/(\s+)/).filter((token) => token !== "");
}

/** Above this many tokens on each side the texts are shown as replaced. */
const MAX_TOKENS = 3000;

export function wordDiff(before: string, after: string): Piece[] {
  const a = words(before);
  const b = words(after);
  if (a.length * b.length > MAX_TOKENS * MAX_TOKENS / 4) {
    return [
      { kind: "removed", text: before },
      { kind: "added", text: after },
    ];
  }
  // lengths[i][j]: the LCS of a[i..] and b[j..].
  const lengths: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    const row = lengths[i]!;
    const below = lengths[i + 1]!;
    for (let j = b.length - 1; j >= 0; j--) {
      row[j] = a[i] === b[j] ? below[j + 1]! + 1 : Math.max(below[j]!, row[j + 1]!);
    }
  }
  const pieces: Piece[] = [];
  const push = (kind: Piece["kind"], text: string) => {
    const last = pieces[pieces.length - 1];
    if (last && last.kind === kind) last.text += text;
    else pieces.push({ kind, text });
  };
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push("same", a[i]!);
      i++;
      j++;
    } else if (lengths[i + 1]![j]! >= lengths[i]![j + 1]!) {
      push("removed", a[i++]!);
    } else {
      push("added", b[j++]!);
    }
  }
  while (i < a.length) push("removed", a[i++]!);
  while (j < b.length) push("added", b[j++]!);
  return pieces;
}
