// Generates src/schema.ts from the server's OpenAPI document
// (services/http/openapi.json) with openapi-typescript.
//
//   node scripts/schema.mjs --write   regenerate src/schema.ts (`npm run generate`)
//   node scripts/schema.mjs --check   fail when src/schema.ts differs from what the
//                                     document generates (`npm run check:schema`), so
//                                     an API change the SDK's types do not follow fails CI
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// Request fields with a default stay optional (openapi-typescript would make them required).
const FLAGS = ["--default-non-nullable", "false"];

const mode = process.argv[2];
if (mode !== "--write" && mode !== "--check") {
  console.error("usage: node scripts/schema.mjs --write | --check");
  process.exit(2);
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const spec = resolve(root, "../../services/http/openapi.json");
const committed = join(root, "src/schema.ts");
const dir = mkdtempSync(join(tmpdir(), "mnemo-schema-"));
try {
  const fresh = join(dir, "schema.ts");
  const cli = join(root, "node_modules/openapi-typescript/bin/cli.js");
  execFileSync(process.execPath, [cli, spec, "-o", fresh, ...FLAGS], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  const want = readFileSync(fresh, "utf8");
  if (mode === "--write") {
    writeFileSync(committed, want);
    console.log("wrote src/schema.ts from services/http/openapi.json");
  } else {
    let have = "";
    try {
      have = readFileSync(committed, "utf8");
    } catch {
      // a missing file differs
    }
    if (want !== have) {
      const a = have.split("\n");
      const b = want.split("\n");
      let line = 0;
      while (line < a.length && line < b.length && a[line] === b[line]) line++;
      console.error(`src/schema.ts is out of date with services/http/openapi.json (first difference at line ${line + 1}):`);
      console.error(`  committed: ${a[line] ?? "<end of file>"}`);
      console.error(`  generated: ${b[line] ?? "<end of file>"}`);
      console.error("Run `npm run generate` in sdks/typescript and commit src/schema.ts.");
      process.exit(1);
    }
    console.log("src/schema.ts matches services/http/openapi.json");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
