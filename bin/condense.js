#!/usr/bin/env node
// Thin launcher: the TypeScript sources are compiled to dist/ by `npm install` (the `prepare` script).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

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
