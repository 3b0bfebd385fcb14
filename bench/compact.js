#!/usr/bin/env node
/**
 * Bench section "compact": for every shared session, `condense compact` with Pi's default
 * settings and the zero-model summary — whether Pi itself would auto-compact it (its window from
 * pi-ai's registry), where the cut lands, and the context Pi sends before → after the compaction
 * entry (the measure every command reports: Pi's estimate per message, summed), with the time it took. Sessions are compacted on temp copies (v1/v2 files
 * migrated to a v3 `--output` copy, as `compact --migrate --output` does); the shared files are
 * never written.
 *
 * Needs a build (`npx tsc -p .`).
 * Usage: node bench/compact.js [--json]
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { alignRows } from "./rows.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const sharedDir = path.resolve(repo, "../shared/sessions");
const dist = (p) => import(pathToFileURL(path.join(repo, "dist", p)).href);

const n = (x) => (x === null || x === undefined ? "—" : x.toLocaleString("en-US"));

/** One row per shared session: { session, piWouldCompact, status, firstKept, split, files, before, after, ms } or { session, error }. */
export async function benchCompact() {
  const { compactSession } = await dist("pipeline/compact.js");
  const tmp = mkdtempSync(path.join(tmpdir(), "condense-bench-compact-"));
  const pi = mkdtempSync(path.join(tmpdir(), "condense-bench-compact-pi-"));
  const saved = process.env.PI_CODING_AGENT_DIR;
  process.env.PI_CODING_AGENT_DIR = pi; // Pi's defaults: no settings.json
  const rows = [];
  try {
    for (const name of readdirSync(sharedDir)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()) {
      const copy = path.join(tmp, name);
      copyFileSync(path.join(sharedDir, name), copy);
      const v1 = !name.includes(".v3.") && !name.includes("migrated-v3");
      const options = {
        dryRun: false,
        force: true,
        migrate: true,
        flags: {},
        summarizer: { kind: "deterministic" },
        ...(v1 ? { output: path.join(tmp, `v3-${name}`) } : {}),
      };
      const t0 = performance.now();
      try {
        const r = await compactSession(copy, options);
        rows.push({
          session: name,
          piWouldCompact: r.trigger.piWouldCompact,
          status: r.status,
          firstKept: r.firstKeptEntryId,
          split: r.isSplitTurn,
          summarized: r.messagesToSummarize,
          files: r.readFiles.length + r.modifiedFiles.length,
          before: r.context.before.tokens,
          after: r.context.after.tokens,
          summaryChars: r.summaryChars,
          ms: performance.now() - t0,
        });
      } catch (error) {
        rows.push({
          session: name,
          error: String(error.message ?? error)
            .split("\n")[0]
            .replace(`${copy}: `, ""),
          ms: performance.now() - t0,
        });
      }
    }
  } finally {
    if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = saved;
    rmSync(tmp, { recursive: true, force: true });
    rmSync(pi, { recursive: true, force: true });
  }
  return rows;
}

/** The rows as aligned text lines. */
export function formatCompactRows(rows) {
  const head = ["session", "Pi would compact", "result", "first kept", "summarized", "files", "context before → after", "ms"];
  const cells = rows.map((r) =>
    r.error
      ? [r.session, "—", `fails: ${r.error.length > 40 ? `${r.error.slice(0, 39)}…` : r.error}`, "", "", "", "", r.ms.toFixed(0)]
      : [
          r.session,
          r.piWouldCompact === null ? "? (window unknown)" : r.piWouldCompact ? "yes" : "no",
          r.status,
          r.firstKept ? `${r.firstKept}${r.split ? " (split)" : ""}` : "—",
          n(r.summarized),
          n(r.files),
          r.status === "compacted" ? `${n(r.before)} → ${n(r.after)} (${Math.round((100 * (r.after - r.before)) / r.before)}%)` : n(r.before),
          r.ms.toFixed(0),
        ],
  );
  return alignRows(head, cells);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(sharedDir)) {
    console.log("compact: skipped, ../shared/sessions is absent");
  } else {
    const rows = await benchCompact();
    if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 2));
    else for (const l of formatCompactRows(rows)) console.log(`  ${l}`);
  }
}
