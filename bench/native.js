#!/usr/bin/env node
/**
 * Bench section "native mode": for every shared session, what stock Pi sends before → after
 * `condense run --target pi` (Pi's own projection of the file, edits applied), next to what the
 * pi-condense extension sends after `run --target extension` — both in the one context measure
 * (`context/size.ts`: Pi's own estimate, ⌈chars / 4⌉ per message the provider receives, summed) —
 * with the context edits written and the
 * time the run took. Deterministic summarizer; each session on temp copies placed where Pi keeps
 * the sessions of its cwd (so stubs name `condense query <ref>` without --session, as for a user);
 * v1 files migrated first, as `run --migrate` does. The shared files are never written.
 *
 * Needs a build (`npx tsc -p .`).
 * Usage: node bench/native.js [--json]
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { alignRows } from "./rows.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const sharedDir = path.resolve(repo, "../shared/sessions");
const dist = (p) => import(pathToFileURL(path.join(repo, "dist", p)).href);

const n = (x) => (x === null || x === undefined ? "—" : x.toLocaleString("en-US"));
const pct = (before, after) => (before === 0 ? "0%" : `${Math.round((100 * (after - before)) / before)}%`);

/** One row per shared session: { session, before, piAlone, extension, edits, ms } or { session, error }. */
export async function benchNative() {
  const { runSession } = await dist("pipeline/run.js");
  const { loadSession } = await dist("session/session.js");
  const { projectBranch } = await dist("context/projection.js");
  const { renderBranch } = await dist("render/render.js");
  const { contextSize } = await dist("context/size.js");
  const { defaultConfig } = await dist("config/config.js");
  const { continueFolder, peekHeader } = await dist("session/locate.js");
  const tmp = mkdtempSync(path.join(tmpdir(), "condense-bench-native-"));
  const saved = process.env.PI_CODING_AGENT_DIR;
  process.env.PI_CODING_AGENT_DIR = path.join(tmp, "agent");
  const config = defaultConfig();
  const tokens = (messages) => contextSize(messages).tokens;
  const run = (file, target) =>
    runSession(
      file,
      {
        config,
        summarizer: { kind: "deterministic" },
        concurrency: 4,
        dryRun: false,
        migrate: true,
        force: true,
        target,
        signal: new AbortController().signal,
      },
      { warn: () => {}, notice: () => {} },
    );
  const rows = [];
  try {
    for (const name of readdirSync(sharedDir)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()) {
      const source = path.join(sharedDir, name);
      const cwd = (await peekHeader(source))?.cwd;
      const native = path.join(typeof cwd === "string" && cwd ? continueFolder(cwd).dir : path.join(tmp, "no-cwd"), name);
      const extension = path.join(tmp, "extension", name);
      for (const f of [native, extension]) {
        mkdirSync(path.dirname(f), { recursive: true });
        copyFileSync(source, f);
      }
      const t0 = performance.now();
      try {
        const report = await run(native, "pi");
        const ms = performance.now() - t0;
        await run(extension, "extension");
        const original = await loadSession(source);
        const extensionAfter = await loadSession(extension);
        rows.push({
          session: name,
          before: tokens(projectBranch(original.branch).map((i) => i.message)),
          piAlone: tokens(projectBranch((await loadSession(native)).branch).map((i) => i.message)),
          extension: tokens(renderBranch(extensionAfter.branch, config).afterAgent),
          edits: report.contextEdits?.written ?? 0,
          ms,
        });
      } catch (error) {
        rows.push({
          session: name,
          error: String(error.message ?? error)
            .split("\n")[0]
            .replace(`${native}: `, ""),
          ms: performance.now() - t0,
        });
      }
    }
  } finally {
    if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = saved;
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}

/** The rows as aligned text lines. */
export function formatNativeRows(rows) {
  const head = ["session", "stock Pi before → after run --target pi", "extension after run --target extension", "edits", "run ms"];
  const cells = rows.map((r) =>
    r.error
      ? [r.session, `fails: ${r.error.length > 40 ? `${r.error.slice(0, 39)}…` : r.error}`, "", "", r.ms.toFixed(0)]
      : [
          r.session,
          `${n(r.before)} → ${n(r.piAlone)} (${pct(r.before, r.piAlone)})`,
          `${n(r.extension)} (${pct(r.before, r.extension)})`,
          n(r.edits),
          r.ms.toFixed(0),
        ],
  );
  return alignRows(head, cells);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(sharedDir)) {
    console.log("native: skipped, ../shared/sessions is absent");
  } else {
    const rows = await benchNative();
    if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 2));
    else for (const l of formatNativeRows(rows)) console.log(`  ${l}`);
  }
}
