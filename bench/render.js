#!/usr/bin/env node
/**
 * Bench section "render" (to be folded into bench/run.js): how long rendering the largest shared
 * session takes after `run`, as a ratio to reading it.
 *
 * - read:   loadSession (read + parse + migrate + tree + branch), median of N runs
 * - render: renderBranch on the loaded branch (index rebuild, projection, the pruneMessages
 *           phases, convertToLlm), median of N runs
 * - ratio:  render / read
 *
 * Needs a build (`npx tsc -p .`). Works on a temp copy; the shared file is never written.
 * Usage: node bench/render.js [--json] [--runs N]
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const sharedDir = path.resolve(repo, "../shared/sessions");
const dist = (p) => import(path.join(repo, "dist", p));

const args = process.argv.slice(2);
const json = args.includes("--json");
const runsAt = args.indexOf("--runs");
const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 15;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const time = async (fn) => {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
};

export async function benchRender({ runs: n = runs } = {}) {
  const { main } = await dist("cli/main.js");
  const { loadSession } = await dist("session/session.js");
  const { renderBranch } = await dist("render/render.js");
  const { defaultConfig } = await dist("config/config.js");

  const largest = readdirSync(sharedDir)
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => ({ f, size: statSync(path.join(sharedDir, f)).size }))
    .sort((a, b) => b.size - a.size)[0];
  const tmp = mkdtempSync(path.join(tmpdir(), "condense-bench-render-"));
  try {
    const file = path.join(tmp, largest.f);
    copyFileSync(path.join(sharedDir, largest.f), file);
    process.env.CONDENSE_NOW ??= "2026-02-01T00:00:00.000Z";
    const write = process.stdout.write;
    process.stdout.write = () => true; // the run's report is not part of the bench output
    let code;
    try {
      code = await main(["node", "condense", "run", file, "--migrate", "--quiet"]);
    } finally {
      process.stdout.write = write;
    }
    if (code !== 0) throw new Error(`run exited ${code} on ${largest.f}`);

    const config = defaultConfig();
    let session = await loadSession(file);
    renderBranch(session.branch, config); // warm up
    const reads = [];
    const renders = [];
    for (let i = 0; i < n; i++) {
      reads.push(await time(async () => (session = await loadSession(file))));
      renders.push(await time(() => renderBranch(session.branch, config)));
    }
    const r = renderBranch(session.branch, config);
    const chars = (m) => JSON.stringify(m).length;
    return {
      session: largest.f,
      bytes: statSync(file).size,
      branchEntries: session.branch.length,
      messages: { before: r.before.length, after: r.after.length },
      chars: { before: chars(r.before), after: chars(r.after) },
      runs: n,
      readMs: +median(reads).toFixed(2),
      renderMs: +median(renders).toFixed(2),
      ratio: +(median(renders) / median(reads)).toFixed(3),
    };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await benchRender();
  if (json) console.log(JSON.stringify({ render: r }, null, 2));
  else {
    console.log(`render: largest shared session ${r.session} (${(r.bytes / 1e6).toFixed(2)} MB, ${r.branchEntries} branch entries), after run`);
    console.log(
      `  context: ${r.messages.before} → ${r.messages.after} messages, ${r.chars.before.toLocaleString("en-US")} → ${r.chars.after.toLocaleString("en-US")} chars`,
    );
    console.log(`  read (loadSession):   ${r.readMs} ms (median of ${r.runs})`);
    console.log(`  render (renderBranch): ${r.renderMs} ms (median of ${r.runs})`);
    console.log(`  render / read:         ${r.ratio}`);
  }
}
