#!/usr/bin/env node
// Bench: condense against Pi's own open path and the bare parse limit on generated sessions of
// growing size (bench/generate.js: real turns repeated with fresh ids; temp files, never kept).
//
//   node bench/scale.js [--sizes 10,20] [--rounds 3] [--base DIR] [--json]
//   (npm run bench runs the sizes in CONDENSE_BENCH_SIZES, default 10,20; the 10,100,300 on request)
//
// Per size, each command runs in a fresh `node` child, the commands alternating inside a round;
// every child reports its own CPU time (user + system, all threads) and peak RSS at exit through
// bench/probe.mjs — CPU time, unlike wall time, hardly moves with the other work on a shared
// machine. Medians of the rounds; ratios are taken between medians of the same run.
//
//   limit   the bare parse limit: readFileSync(utf8) + split("\n") + JSON.parse per line
//   pi      Pi 1.6's own open path: SessionManager.open (read, parse, migrate, index) +
//           buildSessionContext + convertToLlm
//   render  condense render FILE --format json (stdout to /dev/null)
//   run     condense run FILE --dry-run --quiet
//
// --base DIR also measures `render` and `run` of another build (DIR/bin/condense.js, e.g. the main
// branch built elsewhere) in the same rounds, as render@base and run@base: before/after in one run.
//
// Targets (issue 18): render ≤ 1.0× pi and ≤ 2.0× limit at 100 and 300 MB, peak RSS ≤ 4× the file;
// run ≤ 3× limit at every size, CPU exponent between the two largest sizes ≤ 1.05.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildSession, turnSources } from "./generate.js";
import { standalone } from "./standalone.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SHARED = path.resolve(ROOT, "../shared/sessions");
const PROBE = pathToFileURL(path.join(ROOT, "bench/probe.mjs")).href;
const PI_CORE = path.join(ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core");

const WORK = {
  limit: `
const { readFileSync } = await import("node:fs");
const lines = readFileSync(process.argv[1], "utf8").split("\\n");
const out = [];
for (const line of lines) if (line !== "") out.push(JSON.parse(line));
if (out.length < 0) console.log(out);`,
  pi: `
const { SessionManager } = await import(${JSON.stringify(pathToFileURL(path.join(PI_CORE, "session-manager.js")).href)});
const { convertToLlm } = await import(${JSON.stringify(pathToFileURL(path.join(PI_CORE, "messages.js")).href)});
const messages = convertToLlm(SessionManager.open(process.argv[1]).buildSessionContext().messages);
if (messages.length < 0) console.log(messages);`,
};
const CLI = {
  render: (file) => ["render", file, "--format", "json"],
  run: (file) => ["run", file, "--dry-run", "--quiet"],
};
export const KINDS = ["limit", "pi", "render", "run"];

/** One measured child: its CPU ms and peak RSS bytes (from bench/probe.mjs). `kind@base` runs the base build. */
function measure(kind, file, scratch, env, base) {
  const probe = path.join(scratch, `probe-${process.pid}.jsonl`);
  rmSync(probe, { force: true });
  const [name, build] = kind.split("@");
  const bin = build === "base" ? path.join(base, "bin/condense.js") : path.join(ROOT, "bin/condense.js");
  const args = WORK[name] ? ["--import", PROBE, "--input-type=module", "-e", WORK[name], file] : ["--import", PROBE, bin, ...CLI[name](file)];
  const child = spawnSync(process.execPath, args, {
    env: { ...env, CONDENSE_BENCH_PROBE: probe },
    stdio: ["ignore", "ignore", "pipe"],
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (child.status !== 0) throw new Error(`${kind} exited ${child.status}: ${child.stderr.slice(0, 400)}`);
  return JSON.parse(readFileSync(probe, "utf8").trim());
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Measure every kind at every size (MB). Returns per size: bytes, entries, and per kind the median
 * CPU ms and the peak RSS of the rounds.
 */
export async function benchScale({ sizes = [10, 20], rounds = 3, kinds = KINDS, base, log = () => {} } = {}) {
  if (base) kinds = [...kinds, ...kinds.filter((k) => CLI[k]).map((k) => `${k}@base`)];
  const sources = turnSources(SHARED);
  const scratch = mkdtempSync(path.join(tmpdir(), "condense-bench-scale-"));
  const piDir = mkdtempSync(path.join(tmpdir(), "condense-bench-scale-pi-"));
  const env = { ...process.env, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };
  const rows = [];
  try {
    for (const size of sizes) {
      const file = path.join(scratch, `generated-${size}mb.jsonl`);
      const built = buildSession(sources, file, size * 1024 * 1024);
      const runs = Object.fromEntries(kinds.map((k) => [k, []]));
      measure("limit", file, scratch, env); // page cache
      const mtimeBefore = statSync(file).mtimeMs;
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < kinds.length; i++) {
          const kind = kinds[(r + i) % kinds.length];
          runs[kind].push(measure(kind, file, scratch, env, base));
        }
      }
      if (statSync(file).mtimeMs !== mtimeBefore) throw new Error("a measured command changed the generated session");
      const row = { mb: size, bytes: built.bytes, entries: built.entries, kinds: {} };
      for (const k of kinds) row.kinds[k] = { cpuMs: median(runs[k].map((x) => x.cpuMs)), rssBytes: Math.max(...runs[k].map((x) => x.maxRssBytes)) };
      rows.push(row);
      log(row);
      rmSync(file, { force: true });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    rmSync(piDir, { recursive: true, force: true });
  }
  return rows;
}

const fmtMb = (b) => `${(b / 1024 / 1024).toFixed(0)} MB`;
const x = (v) => `${v.toFixed(2)}x`;

/** Lines for one size: CPU and RSS per kind, then the ratios the targets name. */
export function formatScaleRow(row) {
  const k = row.kinds;
  const lines = [`${fmtMb(row.bytes)} (${row.entries.toLocaleString("en-US")} entries): CPU s (median), peak RSS`];
  for (const [name, v] of Object.entries(k)) {
    lines.push(`  ${name.padEnd(7)} ${(v.cpuMs / 1000).toFixed(2).padStart(7)} s  ${fmtMb(v.rssBytes).padStart(8)} = ${x(v.rssBytes / row.bytes)} file`);
  }
  if (k.render && k.pi && k.limit)
    lines.push(`  render / pi ${x(k.render.cpuMs / k.pi.cpuMs)} (target ≤ 1.0x), render / limit ${x(k.render.cpuMs / k.limit.cpuMs)} (≤ 2.0x)`);
  if (k.run && k.limit) lines.push(`  run --dry-run / limit ${x(k.run.cpuMs / k.limit.cpuMs)} (target ≤ 3x)`);
  for (const name of ["render", "run"]) {
    const before = k[`${name}@base`];
    if (before && k[name]) {
      lines.push(
        `  ${name} before (base) → now: CPU ${(before.cpuMs / 1000).toFixed(2)} → ${(k[name].cpuMs / 1000).toFixed(2)} s (${x(k[name].cpuMs / before.cpuMs)}), ` +
          `RSS ${x(before.rssBytes / row.bytes)} → ${x(k[name].rssBytes / row.bytes)} file` +
          (k.limit ? `; before / limit ${x(before.cpuMs / k.limit.cpuMs)}` : "") +
          (k.pi ? `, before / pi ${x(before.cpuMs / k.pi.cpuMs)}` : ""),
      );
    }
  }
  return lines;
}

/** CPU exponent of a kind between two rows: log(cpu ratio) / log(size ratio). */
export function exponent(a, b, kind) {
  return Math.log(b.kinds[kind].cpuMs / a.kinds[kind].cpuMs) / Math.log(b.bytes / a.bytes);
}

const arg = standalone(import.meta.url);
if (arg) {
  const sizes = arg("--sizes", process.env.CONDENSE_BENCH_SIZES ?? "10,20")
    .split(",")
    .map(Number);
  const rounds = Number(arg("--rounds", "3"));
  const kinds = arg("--kinds", KINDS.join(",")).split(",");
  const base = arg("--base", undefined);
  console.log(
    `scale: sizes ${sizes.join(", ")} MB, ${rounds} rounds, ${availableParallelism()} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const rows = await benchScale({ sizes, rounds, kinds, base: base && path.resolve(base), log: (row) => console.log(formatScaleRow(row).join("\n")) });
  for (const kind of ["render", "run", ...(base ? ["render@base", "run@base"] : [])].filter((k) => rows[0]?.kinds[k])) {
    for (let i = 1; i < rows.length; i++)
      console.log(`${kind} CPU exponent ${rows[i - 1].mb} → ${rows[i].mb} MB: ${exponent(rows[i - 1], rows[i], kind).toFixed(2)}`);
  }
  console.log(
    `load now ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  if (process.argv.includes("--json")) console.log(JSON.stringify(rows));
}
