#!/usr/bin/env node
// Thin launcher: the TypeScript sources are compiled to dist/ by `npm install` (the `prepare` script).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// Before anything else loads: a listener for SIGXFSZ. Node ignores the signal, so a write past
// `ulimit -f` fails with EFBIG and condense rolls back its own bytes; but signal-exit (loaded by
// proper-lockfile and ora) re-raises a signal when it is its only listener, which would kill the
// process mid-append (exit 153). With this listener it never is.
process.on("SIGXFSZ", () => {});

const entry = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write("condense: dist/ is missing; run `npm install` (or `npm run build`) in the condense folder first.\n");
  process.exit(2);
}
// A closed pipe (`condense render x | head`) is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error && error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv);
