#!/usr/bin/env node
// Bench: `condense metrics` and `condense run --dry-run` over an archive in Pi's folder layout
// (bench/generate.js: copies of the shared sessions with fresh ids, in a temp folder), --jobs 1
// (one thread) against --jobs N (this thread plus N − 1 worker threads).
//
//   node bench/archive.js [--files 100] [--jobs 2] [--rounds 2] [--commands metrics,run]
//   (npm run bench: CONDENSE_BENCH_ARCHIVE files, default 100; the 500 on request)
//
// Per setting it prints the wall time of each round and the median, and — since the machine is
// shared — the CPU time of every thread of the child (/proc/<pid>/task/*/stat, sampled): the
// JavaScript threads (the main thread, the workers) and V8's / libuv's helper threads. The
// idle-machine estimate of a run's wall time is max(busiest JS thread, all threads / cores): the
// speedup from thread CPU is what the pool buys when nothing else competes for the cores. Both
// settings must print the same document.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildArchive } from "./generate.js";
import { standalone } from "./standalone.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const bin = path.join(root, "bin/condense.js");
const TICKS = 100; // USER_HZ

/** CPU seconds of each thread of `pid`, into `into` (tid → seconds). */
function sampleThreads(pid, into) {
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      into.set(tid, (Number(f[11]) + Number(f[12])) / TICKS);
    }
  } catch {
    // the process is gone
  }
}

/** One run of `condense <args>`: wall ms, stdout (wall times removed), thread CPU (JS threads, all threads). */
function runOnce(args, jobs, env) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, ...args, "--jobs", String(jobs)], { env });
    const cpu = new Map();
    const timer = setInterval(() => sampleThreads(child.pid, cpu), 25);
    const chunks = [];
    let stderr = "";
    child.stdout.on("data", (c) => chunks.push(c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("close", (code) => {
      clearInterval(timer);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0 && code !== 1) return reject(new Error(`${args[0]} --jobs ${jobs} exited ${code}: ${stderr.slice(0, 500)}`));
      // JS threads: the main thread (tid = pid) and, with workers, the jobs − 1 busiest others.
      const main = cpu.get(String(child.pid)) ?? 0;
      const others = [...cpu]
        .filter(([tid]) => tid !== String(child.pid))
        .map(([, s]) => s)
        .sort((a, b) => b - a);
      const js = jobs > 1 ? [main, ...others.slice(0, jobs - 1)] : [main];
      const total = [...cpu.values()].reduce((a, b) => a + b, 0);
      const stdout = Buffer.concat(chunks)
        .toString("utf8")
        .replace(/"wallMs": \d+/g, '"wallMs": 0');
      resolve({ ms, stdout, cpu: { js, total } });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const estimate = (r) => Math.max(...r.cpu.js, r.cpu.total / availableParallelism());
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** The commands measured, by name. */
const COMMANDS = {
  metrics: (dir) => ["metrics", dir, "--json", "--quiet"],
  run: (dir) => ["run", dir, "--dry-run", "--json", "--quiet"],
};

/**
 * Measure each command at --jobs 1 and --jobs N over a generated archive of `files` sessions.
 * @returns per command: medians of wall and idle-machine estimates, their speedups, whether both printed the same
 */
export async function benchArchive({ files = 100, jobs = 2, rounds = 2, commands = ["metrics", "run"], log = () => {} } = {}) {
  const shared = path.resolve(root, "../shared/sessions");
  const dir = mkdtempSync(path.join(tmpdir(), "condense-bench-archive-"));
  const piDir = mkdtempSync(path.join(tmpdir(), "condense-bench-archive-pi-"));
  const results = [];
  try {
    const built = buildArchive(shared, dir, files);
    log(`archive: ${files} sessions in Pi's folder layout, ${(built.bytes / 1024 / 1024).toFixed(0)} MB; ${availableParallelism()} cores, load ${load()}`);
    const env = { ...process.env, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };
    for (const name of commands) {
      const args = COMMANDS[name](dir);
      await runOnce(args, 1, env); // page cache, and the command's modules
      const one = [];
      const pool = [];
      for (let round = 0; round < rounds; round++) {
        const a = await runOnce(args, 1, env);
        const b = await runOnce(args, jobs, env);
        one.push(a);
        pool.push(b);
        const cpu = (r) => `JS threads ${r.cpu.js.map((s) => s.toFixed(2)).join(" + ")} s, all threads ${r.cpu.total.toFixed(2)} s`;
        log(`  ${name} round ${round + 1}: --jobs 1 ${(a.ms / 1000).toFixed(2)} s (${cpu(a)}); --jobs ${jobs} ${(b.ms / 1000).toFixed(2)} s (${cpu(b)})`);
      }
      const wall = [median(one.map((r) => r.ms)) / 1000, median(pool.map((r) => r.ms)) / 1000];
      const est = [median(one.map(estimate)), median(pool.map(estimate))];
      const same = one.every((r) => r.stdout === one[0].stdout) && pool.every((r) => r.stdout === one[0].stdout);
      results.push({ command: name, files, jobs, wall, est, wallSpeedup: wall[0] / wall[1], estSpeedup: est[0] / est[1], same });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(piDir, { recursive: true, force: true });
  }
  return results;
}

/** The lines of one command's result. */
export function formatArchive(r) {
  return [
    `${r.command}: --jobs 1 ${r.wall[0].toFixed(2)} s, --jobs ${r.jobs} ${r.wall[1].toFixed(2)} s wall (speedup ${r.wallSpeedup.toFixed(2)}x, machine shared); ` +
      `idle-machine estimate from thread CPU ${r.est[0].toFixed(2)} s → ${r.est[1].toFixed(2)} s, speedup ${r.estSpeedup.toFixed(2)}x (target ≥ 1.6x); ` +
      `same document: ${r.same ? "yes" : "NO"}`,
  ];
}

const arg = standalone(import.meta.url);
if (arg) {
  const results = await benchArchive({
    files: Number(arg("--files", process.env.CONDENSE_BENCH_ARCHIVE ?? "100")),
    jobs: Number(arg("--jobs", "2")),
    rounds: Number(arg("--rounds", "2")),
    commands: arg("--commands", "metrics,run").split(","),
    log: (line) => console.log(line),
  });
  for (const r of results) for (const line of formatArchive(r)) console.log(line);
  console.log(`load now ${load()}`);
  if (results.some((r) => !r.same)) process.exitCode = 1;
}
