// The console's build: one script and one stylesheet with fixed names
// (dist/console.js, dist/console.css), no content hashes and no chunks, so
// that services/http/src/console.rs can include them by name and a rebuild
// of the same sources gives the same bytes (services/http/console/check).
import { fileURLToPath } from "node:url";

import { defineConfig } from "vite";

const sdk = fileURLToPath(new URL("../../../sdks/typescript/src/index.ts", import.meta.url));

export default defineConfig({
  // The shell (index.html) is served by the binary, not built here.
  publicDir: false,
  resolve: { alias: { "@mnemo/client": sdk } },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    cssCodeSplit: false,
    modulePreload: false,
    sourcemap: false,
    reportCompressedSize: true,
    rolldownOptions: {
      input: fileURLToPath(new URL("src/main.tsx", import.meta.url)),
      output: {
        format: "es",
        entryFileNames: "console.js",
        assetFileNames: "console[extname]",
        codeSplitting: false,
      },
    },
  },
});
