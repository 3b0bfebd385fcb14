#!/usr/bin/env node
/**
 * Bench section "summary quality" (docs/design.md "Summary quality"): per shared session, of the
 * file paths, error lines and exit codes in the tool outputs a deterministic `run` prunes, the
 * share still in the context Pi sends afterwards (stubs, summaries, chain blocks, the rest), and
 * how much smaller that context is — next to the same figures for plain observation masking of the
 * same outputs (each replaced by a stub that says nothing). Nothing is written.
 *
 * Needs a build (`npm run build`). Usage: node bench/quality.js [--json]
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const sharedDir = path.resolve(repo, "../shared/sessions");
const dist = (p) => import(path.join(repo, "dist", p));

/** The figures of every shared session, in name order. */
export async function benchQuality() {
  const { openSession } = await dist("session/open.js");
  const { sessionView } = await dist("pipeline/view.js");
  const { renderAfterRun } = await dist("pipeline/render.js");
  const { defaultConfig } = await dist("config/config.js");
  const { pruneQuality } = await dist("report/quality.js");
  const rows = [];
  for (const name of readdirSync(sharedDir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()) {
    const session = await openSession(path.join(sharedDir, name), "read");
    const view = sessionView(session, defaultConfig());
    let toolCalls = 0;
    for (const e of session.branch)
      if (e.type === "message" && e.message?.role === "assistant" && Array.isArray(e.message.content))
        toolCalls += e.message.content.filter((b) => b?.type === "toolCall").length;
    const after = await renderAfterRun(view.fork());
    rows.push({ session: name, toolCalls, ...pruneQuality(view.rendered.afterAgent, after.afterAgent) });
  }
  return rows;
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;
const kept = (k) => (k.facts === 0 ? "—" : pct(k.share));
const smaller = (before, after) => (before > after ? `-${Math.round((100 * (before - after)) / before)}%` : "0%");

/** The table the bench prints: one line per session, then which sessions fall under 90%. */
export function formatQuality(rows) {
  const lines = ["session                                       calls pruned  facts | condense kept  smaller | masking kept  smaller"];
  for (const r of rows) {
    lines.push(
      `${r.session.slice(0, 44).padEnd(44)} ${String(r.toolCalls).padStart(6)} ${String(r.pruned).padStart(6)} ${String(r.condense.facts).padStart(6)} |` +
        ` ${kept(r.condense).padStart(13)} ${smaller(r.condense.tokensBefore, r.condense.tokensAfter).padStart(8)} |` +
        ` ${kept(r.masking).padStart(12)} ${smaller(r.condense.tokensBefore, r.masking.tokensAfter).padStart(8)}`,
    );
  }
  const large = rows.filter((r) => r.toolCalls >= 150);
  const low = large.filter((r) => r.condense.share < 0.9);
  lines.push(
    `sessions with ≥ 150 tool calls: ${large.length}; kept ≥ 90% on ${large.length - low.length}` +
      (low.length ? ` (below: ${low.map((r) => `${r.session} ${pct(r.condense.share)}`).join(", ")})` : ""),
  );
  return lines;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  if (!existsSync(sharedDir)) {
    console.error("bench/quality.js: ../shared/sessions is absent");
    process.exit(2);
  }
  const rows = await benchQuality();
  if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 2));
  else for (const line of formatQuality(rows)) console.log(line);
}
