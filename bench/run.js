#!/usr/bin/env node
// Benchmarks for condense (issue "Foundations"). Run `npm run build` first, then `node bench/run.js`
// (or `npm run bench`). Plain ESM JavaScript over ../dist/, so it measures what users run.
//
// Each entry of `sections` is an async function that measures one thing and prints its own lines;
// add a section by pushing another function. Sections share `ctx` (paths, the largest session,
// helpers) and register temp files in `ctx.tempFiles`, which are deleted at the end, also on failure.
//
// Targets: read+project ≤ 1.5x a bare JSON.parse loop over the same file. Issue 18 (CPU time, not
// wall time: the machine is shared): render --format json ≤ 1.0x Pi's own open path and ≤ 2.0x the
// bare parse limit, peak RSS ≤ 4x the file; run --dry-run ≤ 3x the parse limit with a CPU exponent
// ≤ 1.05 between the two largest sizes; --jobs 2 ≥ 1.6x --jobs 1 over an archive; the model path
// ≥ 0.9 of ideal at concurrency 32. The default run takes a few minutes; the sizes on request:
//   CONDENSE_BENCH_SIZES=10,100,300 CONDENSE_BENCH_ARCHIVE=500 npm run bench

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(ROOT, "dist");
const SHARED = path.resolve(ROOT, "../shared/sessions");

if (!existsSync(path.join(DIST, "session/session.js"))) {
  console.error("bench: dist/ is missing; run `npm run build` first.");
  process.exit(2);
}

const distUrl = (rel) => pathToFileURL(path.join(DIST, rel)).href;
const { loadSession } = await import(distUrl("session/session.js"));
const { convertToLlm, projectBranch } = await import(distUrl("context/projection.js"));

// ---------------------------------------------------------------------------------------------
// Helpers

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const ms = (x) => `${x.toFixed(x < 100 ? 1 : 0)} ms`;
const ratio = (x) => `${x.toFixed(2)}x`;

/** Print rows as a compact two-column table: label, value. */
function table(rows) {
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);
}

/** What condense does for `render`: read, migrate, index, project the branch, convert for the LLM. */
async function ours(file) {
  const session = await loadSession(file);
  const messages = convertToLlm(projectBranch(session.branch).map((i) => i.message));
  return session.entries.length + messages.length;
}

/** The floor: read the file, split on \n, JSON.parse each line (kept, as any loader must keep them). */
function bare(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  const out = [];
  for (const line of lines) if (line !== "") out.push(JSON.parse(line));
  return out.length;
}

/**
 * A stricter floor than `bare`: read the file as a Buffer, split on the newline byte, decode and
 * parse each line (what the reader does, minus everything else). `bare` decodes the whole file to
 * one string first, which costs extra when the file holds any non-ASCII byte (the string becomes
 * two-byte), so both floors are reported.
 */
function bareBytes(file) {
  const buf = readFileSync(file);
  const out = [];
  let start = 0;
  for (let nl = buf.indexOf(10); nl !== -1; nl = buf.indexOf(10, start)) {
    if (nl > start) out.push(JSON.parse(buf.toString("utf8", start, nl)));
    start = nl + 1;
  }
  if (start < buf.length) out.push(JSON.parse(buf.toString("utf8", start)));
  return out.length;
}

/**
 * Median wall time (ms) of each named function over `reps` rounds after `warmup` rounds; the order
 * inside a round rotates so no function always runs right after a GC-heavy sibling.
 */
async function timeAll(file, fns, reps, warmup) {
  const names = Object.keys(fns);
  for (let i = 0; i < warmup; i++) for (const n of names) await fns[n](file);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < reps; i++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length];
      const t0 = performance.now();
      await fns[n](file);
      times[n].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(times[n])]));
}

const FNS = { ours, bare, bareBytes };

/** The timing rows shared by the read+project sections. */
function timingRows(t) {
  return [
    ["ours: loadSession + projectBranch + convertToLlm", ms(t.ours)],
    ["bare: readFileSync(utf8) + split + JSON.parse each", ms(t.bare)],
    ["bare, per-line decode: Buffer lines + JSON.parse each", ms(t.bareBytes)],
    ["read+project / bare JSON.parse loop", `${ratio(t.ours / t.bare)} (target ≤ 1.5x)`],
    ["read+project / bare per-line-decode loop", ratio(t.ours / t.bareBytes)],
  ];
}

/** The largest v3 session in the shared folder (header version 3). */
function largestV3() {
  if (!existsSync(SHARED)) return null;
  const candidates = readdirSync(SHARED)
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => path.join(SHARED, f))
    .filter((p) => {
      const first = readFileSync(p, "utf8").split("\n", 1)[0];
      try {
        const h = JSON.parse(first);
        return h.type === "session" && h.version === 3;
      } catch {
        return false;
      }
    })
    .map((p) => ({ p, size: statSync(p).size }))
    .sort((a, b) => b.size - a.size);
  return candidates[0]?.p ?? null;
}

// ---------------------------------------------------------------------------------------------
// Sections

/** Shared by the sections: the source session, temp files to delete, one-line results for the summary. */
const ctx = { largest: largestV3(), tempFiles: [], summary: [] };

const sections = [
  async function header() {
    console.log(`condense bench — node ${process.version}, ${os.availableParallelism()} cores, ${os.platform()} ${os.arch()}, ` + `${mb(os.totalmem())} RAM`);
  },

  async function largestSharedSession(c) {
    if (!c.largest) {
      console.log("\n[read+project, largest shared session] skipped: ../shared/sessions is absent");
      return;
    }
    const size = statSync(c.largest).size;
    const reps = 15;
    const t = await timeAll(c.largest, FNS, reps, 3);
    console.log(`\n[read+project, largest shared session] ${path.basename(c.largest)} (${mb(size)}), median of ${reps}`);
    table(timingRows(t));
    c.summary.push(`read+project / bare JSON.parse loop = ${ratio(t.ours / t.bare)} (target ≤ 1.5x)  [${mb(size)} shared session]`);
  },

  async function scale(c) {
    if (!c.largest) {
      console.log("\n[render and run against Pi's open path and the parse limit] skipped: ../shared/sessions is absent");
      return;
    }
    const { benchScale, formatScaleRow, exponent } = await import("./scale.js");
    const sizes = (process.env.CONDENSE_BENCH_SIZES ?? "10,20").split(",").map(Number);
    console.log(
      `\n[render and run against Pi's open path and the parse limit] generated sessions of ${sizes.join(", ")} MB (CONDENSE_BENCH_SIZES), ` +
        `CPU time of fresh processes (all threads), medians of 3, load ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}`,
    );
    const rows = await benchScale({
      sizes,
      rounds: 3,
      log: (row) =>
        console.log(
          formatScaleRow(row)
            .map((l) => `  ${l}`)
            .join("\n"),
        ),
    });
    for (const row of rows) {
      const k = row.kinds;
      c.summary.push(
        `render / pi = ${ratio(k.render.cpuMs / k.pi.cpuMs)} (≤ 1.0x), render / limit = ${ratio(k.render.cpuMs / k.limit.cpuMs)} (≤ 2.0x), ` +
          `render RSS = ${ratio(k.render.rssBytes / row.bytes)} file (≤ 4x), run --dry-run / limit = ${ratio(k.run.cpuMs / k.limit.cpuMs)} (≤ 3x)  [${mb(row.bytes)}]`,
      );
    }
    if (rows.length > 1) {
      const [a, b] = rows.slice(-2);
      const line = `run CPU exponent ${a.mb} → ${b.mb} MB = ${exponent(a, b, "run").toFixed(2)} (≤ 1.05), render ${exponent(a, b, "render").toFixed(2)}`;
      console.log(`  ${line}`);
      c.summary.push(line);
    }
  },

  async function startup(c) {
    // CPU time of each process (bench/probe.mjs), alternating; wall times too.
    const runs = 10;
    const probe = path.join(os.tmpdir(), `condense-bench-probe-${process.pid}.jsonl`);
    c.tempFiles.push(probe);
    const measure = (args) => {
      rmSync(probe, { force: true });
      const t0 = performance.now();
      const child = spawnSync(process.execPath, ["--import", pathToFileURL(path.join(ROOT, "bench/probe.mjs")).href, ...args], {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, CONDENSE_BENCH_PROBE: probe },
      });
      const wall = performance.now() - t0;
      if (child.status !== 0) throw new Error(`${args.join(" ")} exited ${child.status}: ${child.stderr}`);
      return { wall, cpu: JSON.parse(readFileSync(probe, "utf8").trim()).cpuMs };
    };
    const node = [];
    const help = [];
    for (let i = 0; i < runs; i++) {
      node.push(measure(["-e", "0"]));
      help.push(measure([path.join(ROOT, "bin/condense.js"), "--help"]));
    }
    const cpu = (xs) => median(xs.map((x) => x.cpu));
    const wall = (xs) => median(xs.map((x) => x.wall));
    console.log(`\n[start-up] median of ${runs}, alternating`);
    table([
      ["node bin/condense.js --help", `${ms(cpu(help))} CPU, ${ms(wall(help))} wall`],
      ["node -e 0 (bare node start-up)", `${ms(cpu(node))} CPU, ${ms(wall(node))} wall`],
      ["condense --help / node -e 0", `${ratio(cpu(help) / cpu(node))} CPU, ${ratio(wall(help) / wall(node))} wall`],
      ["condense's own share", `${ms(cpu(help) - cpu(node))} CPU`],
    ]);
    c.summary.push(`condense --help start-up = ${ratio(cpu(help) / cpu(node))} node -e 0 in CPU (${ms(cpu(help) - cpu(node))} of its own)`);
  },

  async function render(c) {
    if (!c.largest) {
      console.log("\n[render after run] skipped: ../shared/sessions is absent");
      return;
    }
    const { benchRender } = await import("./render.js");
    const r = await benchRender({ runs: 15 });
    console.log(`\n[render after run] ${r.session} (${mb(r.bytes)}, ${r.branchEntries} branch entries), median of ${r.runs}`);
    table([
      ["read (loadSession)", ms(r.readMs)],
      ["render (renderBranch: index, projection, four phases)", ms(r.renderMs)],
      ["render / read", ratio(r.ratio)],
    ]);
    c.summary.push(`render / read = ${ratio(r.ratio)}  [largest shared session after run]`);
  },

  async function summaryQuality(c) {
    if (!c.largest) {
      console.log("\n[summary quality] skipped: ../shared/sessions is absent");
      return;
    }
    const { benchQuality, formatQuality } = await import("./quality.js");
    console.log(
      "\n[summary quality] of the paths, error lines and exit codes in the outputs a deterministic run prunes, the share\n" +
        "  still in the context Pi sends after it, and how much smaller that context is; beside it plain masking (stubs only)",
    );
    const lines = formatQuality(await benchQuality());
    for (const line of lines) console.log(`  ${line}`);
    c.summary.push(lines[lines.length - 1]);
  },

  async function compact(c) {
    if (!c.largest) {
      console.log("\n[compact, every shared session] skipped: ../shared/sessions is absent");
      return;
    }
    const { benchCompact, formatCompactRows } = await import("./compact.js");
    const rows = await benchCompact();
    console.log("\n[compact, every shared session] Pi's defaults, zero-model summary; context = what Pi sends (~tokens) before → after");
    for (const line of formatCompactRows(rows)) console.log(`  ${line}`);
    const done = rows.filter((r) => r.status === "compacted");
    const sum = (f) => done.reduce((t, r) => t + f(r), 0);
    c.summary.push(
      `compact: ${done.length} of ${rows.length} shared sessions compacted, context ${sum((r) => r.before).toLocaleString("en-US")} → ${sum((r) => r.after).toLocaleString("en-US")} tokens in total`,
    );
  },

  async function native(c) {
    if (!c.largest) {
      console.log("\n[native mode, every shared session] skipped: ../shared/sessions is absent");
      return;
    }
    const { benchNative, formatNativeRows, nativeSummary } = await import("./native.js");
    const rows = await benchNative();
    console.log("\n[native mode, every shared session] deterministic summarizer; context = Pi's estimate (tokens) of what Pi sends");
    for (const line of formatNativeRows(rows)) console.log(`  ${line}`);
    console.log(`  ${nativeSummary(rows)}`);
    c.summary.push(nativeSummary(rows));
    const done = rows.filter((r) => !r.error);
    const sum = (f) => done.reduce((t, r) => t + f(r), 0);
    c.summary.push(
      `native mode: stock Pi ${sum((r) => r.before).toLocaleString("en-US")} → ${sum((r) => r.piAlone).toLocaleString("en-US")} tokens over ${done.length} shared sessions (the extension: ${sum((r) => r.extension).toLocaleString("en-US")})`,
    );
  },

  // Sections that run in their own process (a local server, worker threads): their output as is.
  async function llmSummaries(c) {
    console.log("\n[model-written summaries] bench/llm.js");
    const child = spawnSync(process.execPath, [path.join(ROOT, "bench/llm.js")], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });
    process.stdout.write(child.stdout);
    for (const line of child.stdout.split("\n")) if (/concurrency\s+32:|own CPU per call/.test(line)) c.summary.push(line.trim().replace(/\s+/g, " "));
  },

  async function archive(c) {
    if (!c.largest) {
      console.log("\n[run and metrics over an archive] skipped: ../shared/sessions is absent");
      return;
    }
    const files = process.env.CONDENSE_BENCH_ARCHIVE ?? "100";
    console.log(`\n[run and metrics over an archive, --jobs 1 vs 2] bench/archive.js --files ${files} (CONDENSE_BENCH_ARCHIVE)`);
    const child = spawnSync(process.execPath, [path.join(ROOT, "bench/archive.js"), "--files", files], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
      encoding: "utf8",
    });
    process.stdout.write(child.stdout.replace(/^/gm, "  "));
    for (const line of child.stdout.split("\n")) if (/^(metrics|run): /.test(line)) c.summary.push(line.trim().replace(/\s+/g, " "));
  },

  async function summary(c) {
    console.log("\n[summary]");
    for (const line of c.summary) console.log(`  ${line}`);
  },
];

const cleanup = () => {
  for (const f of ctx.tempFiles) rmSync(f, { force: true });
};
process.on("SIGINT", () => {
  cleanup();
  process.exit(130);
});

const started = performance.now();
try {
  for (const section of sections) await section(ctx);
} finally {
  cleanup();
}
console.log(`\ntotal bench time ${((performance.now() - started) / 1000).toFixed(1)} s`);
