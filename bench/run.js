#!/usr/bin/env node
// Benchmarks for condense (issue "Foundations"). Run `npm run build` first, then `node bench/run.js`
// (or `npm run bench`). Plain ESM JavaScript over ../dist/, so it measures what users run.
//
// Each entry of `sections` is an async function that measures one thing and prints its own lines;
// add a section by pushing another function. Sections share `ctx` (paths, the largest session,
// helpers) and register temp files in `ctx.tempFiles`, which are deleted at the end, also on failure.
//
// Targets: read+project ≤ 1.5x a bare JSON.parse loop over the same file; peak RSS of the reader
// < 3x the file size. Whole run: well under 2 minutes on a 2-core machine.

import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
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

/**
 * The same work in a fresh `node` child (fresh heap, nothing left over from earlier runs):
 * modules are imported first, then only the work is timed. Returns wall ms of the work and the
 * child's peak RSS in bytes (`process.resourceUsage().maxRSS` is in KB).
 */
function inChild(kind, file) {
  const code = `
const kind = process.argv[1];
const file = process.argv[2];
const { readFileSync } = await import("node:fs");
const { performance } = await import("node:perf_hooks");
const { loadSession } = await import(${JSON.stringify(distUrl("session/session.js"))});
const { convertToLlm, projectBranch } = await import(${JSON.stringify(distUrl("context/projection.js"))});
const work = {
  empty: () => 0,
  ours: async () => {
    const session = await loadSession(file);
    return session.entries.length + convertToLlm(projectBranch(session.branch).map((i) => i.message)).length;
  },
  bare: ${bare.toString()},
  bareBytes: ${bareBytes.toString()},
}[kind];
const t0 = performance.now();
const n = await work(file);
const ms = performance.now() - t0;
console.log(JSON.stringify({ n, ms, maxRSS: process.resourceUsage().maxRSS }));
`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", code, kind, file], { encoding: "utf8" });
  if (child.status !== 0) throw new Error(`${kind} child failed (${child.status}): ${child.stderr}`);
  const r = JSON.parse(child.stdout.trim().split("\n").pop());
  return { ms: r.ms, rss: r.maxRSS * 1024 };
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

/**
 * Write a ~`targetBytes` session to `dest`: one header, then the source's entries repeated with
 * fresh unique 8-hex ids; parentIds (and firstKeptEntryId / targetId / fromId) rewired through the
 * copy's id map, the first entry of each copy hung under the last entry of the previous one, so
 * the active branch runs through the whole file.
 */
function buildBigSession(source, dest, targetBytes) {
  const lines = readFileSync(source, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
  const header = JSON.parse(lines[0]);
  const entries = [];
  for (const line of lines.slice(1)) {
    try {
      entries.push(JSON.parse(line));
    } catch {
      // skip what the reader would skip
    }
  }
  let counter = 0x10000000;
  const fresh = () => (counter++).toString(16);
  const fd = openSync(dest, "w");
  let written = 0;
  let lastId = null;
  let copies = 0;
  try {
    const head = `${JSON.stringify({ ...header, id: "bench-0000-0000-0000-000000000001" })}\n`;
    written += writeSync(fd, head);
    while (written < targetBytes) {
      const map = new Map(entries.map((e) => [e.id, fresh()]));
      const remap = (id) => (id == null ? id : (map.get(id) ?? id));
      const chunk = [];
      for (const e of entries) {
        const copy = { ...e, id: map.get(e.id), parentId: e.parentId == null ? lastId : remap(e.parentId) };
        if (typeof e.firstKeptEntryId === "string") copy.firstKeptEntryId = remap(e.firstKeptEntryId);
        if (typeof e.targetId === "string") copy.targetId = remap(e.targetId);
        if (typeof e.fromId === "string") copy.fromId = remap(e.fromId);
        chunk.push(JSON.stringify(copy));
      }
      lastId = map.get(entries[entries.length - 1].id);
      written += writeSync(fd, `${chunk.join("\n")}\n`);
      copies++;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes: written, copies, entries: copies * entries.length };
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

  async function hundredMegabytes(c) {
    if (!c.largest) {
      console.log("\n[read+project, ~100 MB] skipped: no source session");
      return;
    }
    const file = path.join(os.tmpdir(), `condense-bench-run-${process.pid}.jsonl`);
    c.tempFiles.push(file);
    const t0 = performance.now();
    const built = buildBigSession(c.largest, file, 100 * 1024 * 1024);
    const buildMs = performance.now() - t0;
    // Each run in a fresh child: a 100 MB heap left over from one run would skew the next.
    const rounds = 3;
    const kinds = Object.keys(FNS);
    const runs = Object.fromEntries(kinds.map((k) => [k, []]));
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(i + k) % kinds.length];
        runs[kind].push(inChild(kind, file));
      }
    }
    const t = Object.fromEntries(kinds.map((k) => [k, median(runs[k].map((r) => r.ms))]));
    const peak = (k) => Math.max(...runs[k].map((r) => r.rss));
    const baseRss = inChild("empty", file).rss;
    const oursRss = peak("ours");
    const bareRss = peak("bare");
    const bareBytesRss = peak("bareBytes");
    console.log(
      `\n[read+project, ~100 MB] ${built.copies} copies of ${path.basename(c.largest)}, ` +
        `${built.entries.toLocaleString("en-US")} entries, ${mb(built.bytes)} (built in ${ms(buildMs)}), median of ${rounds} fresh children each`,
    );
    table([
      ...timingRows(t),
      ["peak RSS, ours (fresh child)", mb(oursRss)],
      ["peak RSS, bare loop (fresh child)", `${mb(bareRss)} = ${ratio(bareRss / built.bytes)} file size`],
      ["peak RSS, bare per-line-decode loop (fresh child)", `${mb(bareBytesRss)} = ${ratio(bareBytesRss / built.bytes)} file size`],
      ["peak RSS, empty node child", mb(baseRss)],
      ["peak RSS", `${ratio(oursRss / built.bytes)} file size (target < 3x)`],
    ]);
    c.summary.push(`read+project / bare JSON.parse loop = ${ratio(t.ours / t.bare)} (target ≤ 1.5x)  [${mb(built.bytes)} file]`);
    c.summary.push(`peak RSS = ${ratio(oursRss / built.bytes)} file size (target < 3x)  [${mb(built.bytes)} file]`);
  },

  async function startup(c) {
    const runs = 5;
    const time = (args) => {
      const xs = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" });
        xs.push(performance.now() - t0);
        if (child.status !== 0) throw new Error(`${args.join(" ")} exited ${child.status}: ${child.stderr}`);
      }
      return median(xs);
    };
    const node = time(["-e", "0"]);
    const help = time([path.join(ROOT, "bin/condense.js"), "--help"]);
    console.log(`\n[start-up] median of ${runs}`);
    table([
      ["node bin/condense.js --help", ms(help)],
      ["node -e 0 (bare node start-up)", ms(node)],
      ["condense's own share", ms(help - node)],
    ]);
    c.summary.push(`condense --help start-up = ${ms(help)} (node alone ${ms(node)})`);
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
    for (const line of child.stdout.split("\n")) if (/concurrency\s+(8|32):/.test(line)) c.summary.push(line.trim().replace(/\s+/g, " "));
  },

  async function metricsArchive(c) {
    if (!c.largest) {
      console.log("\n[metrics over an archive] skipped: ../shared/sessions is absent");
      return;
    }
    console.log("\n[metrics over an archive] bench/metrics.js");
    const child = spawnSync(process.execPath, [path.join(ROOT, "bench/metrics.js")], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });
    process.stdout.write(child.stdout);
    const speedup = child.stdout.split("\n").find((l) => /speedup/i.test(l));
    if (speedup) c.summary.push(speedup.trim().replace(/\s+/g, " "));
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
