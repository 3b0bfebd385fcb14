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
/** A module of the build, by its path under dist/ (`pipeline/run.js`). */
const dist = (p) => import(pathToFileURL(path.join(repo, "dist", p)).href);

const n = (x) => (x === null || x === undefined ? "—" : x.toLocaleString("en-US"));
/** The change of after against before, in percent with one decimal (`-62.0%`). */
const change = (before, after) => (before === 0 ? 0 : (100 * (after - before)) / before);
const pct = (before, after) => `${change(before, after).toFixed(1)}%`;
/** Tool calls in a message list (assistant `toolCall` blocks). */
const toolCalls = (messages) =>
  messages.reduce((t, m) => t + (m.role === "assistant" && Array.isArray(m.content) ? m.content.filter((b) => b?.type === "toolCall").length : 0), 0);
/** How many points more the extension's run takes off than stock Pi's (one decimal). */
const gap = (r) => change(r.before, r.piAlone) - change(r.before, r.extension);
/** The sessions the summary line speaks of: this many tool calls or more in the context before the run. */
export const MANY_CALLS = 150;

/**
 * One row per shared session: { session, calls, before, piAlone, extension, edits, ms } or { session, error }.
 * @param load imports a module of condense by its path under dist/ (default: the build; a test passes the sources)
 */
export async function benchNative(load = dist) {
  const { runSession } = await load("pipeline/run.js");
  const { loadSession } = await load("session/session.js");
  const { projectBranch } = await load("context/projection.js");
  const { renderBranch } = await load("render/render.js");
  const { contextSize } = await load("context/size.js");
  const { defaultConfig } = await load("config/config.js");
  const { continueFolder, peekHeader } = await load("session/locate.js");
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
        const projected = projectBranch(original.branch).map((i) => i.message);
        rows.push({
          session: name,
          calls: toolCalls(projected),
          before: tokens(projected),
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
  const head = [
    "session",
    "tool calls",
    "stock Pi before → after run --target pi",
    "extension after run --target extension",
    "gap (points)",
    "edits",
    "run ms",
  ];
  const cells = rows.map((r) =>
    r.error
      ? [r.session, "", `fails: ${r.error.length > 40 ? `${r.error.slice(0, 39)}…` : r.error}`, "", "", "", r.ms.toFixed(0)]
      : [
          r.session,
          n(r.calls),
          `${n(r.before)} → ${n(r.piAlone)} (${pct(r.before, r.piAlone)})`,
          `${n(r.extension)} (${pct(r.before, r.extension)})`,
          gap(r).toFixed(1),
          n(r.edits),
          r.ms.toFixed(0),
        ],
  );
  return alignRows(head, cells);
}

/**
 * The figure the README quotes: over the sessions with {@link MANY_CALLS} tool calls or more in the
 * context, the range of stock Pi's reduction and the largest gap to the extension, in points.
 */
export function nativeSummary(rows) {
  const many = rows.filter((r) => !r.error && r.calls >= MANY_CALLS);
  if (many.length === 0) return `native mode: no shared session has ${MANY_CALLS} tool calls or more in its context`;
  const cuts = many.map((r) => -change(r.before, r.piAlone));
  const gaps = many.map(gap);
  return (
    `native mode, the ${many.length} shared sessions with ${MANY_CALLS}+ tool calls in the context: stock Pi's context shrinks by ` +
    `${Math.min(...cuts).toFixed(1)}–${Math.max(...cuts).toFixed(1)}%, ${Math.min(...gaps).toFixed(1)}–${Math.max(...gaps).toFixed(1)} points less than the extension's`
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(sharedDir)) {
    console.log("native: skipped, ../shared/sessions is absent");
  } else {
    const rows = await benchNative();
    if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 2));
    else {
      for (const l of formatNativeRows(rows)) console.log(`  ${l}`);
      console.log(`  ${nativeSummary(rows)}`);
    }
  }
}
