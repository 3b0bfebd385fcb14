#!/usr/bin/env node
// Benchmark: `condense metrics` over a folder of 200 sessions (copies of the shared real sessions),
// --jobs 1 (one process, one thread) against --jobs N (worker threads). Standalone; meant to be
// folded into bench/run.js. Needs a build (`npx tsc -p .`).
//
//   node bench/metrics.js [--files 200] [--jobs 2] [--rounds 3] [--sessions DIR]
//
// Prints the wall time of each round, the median per setting, the speedup, the machine's load
// average (the bench shares the machine), and checks that both settings print the same document.
// A third setting, --jobs N in one thread (CONDENSE_WORKERS=0: p-limit only), shows what the
// worker pool buys.
//
// On Linux it also samples the CPU time of every thread of the child (/proc/<pid>/task/*/stat), so
// that on a machine shared with other work the figures can be read without the contention: the
// JavaScript threads (the main thread, the workers) and V8's / libuv's helper threads. An estimate
// of the idle-machine wall time is max(busiest JS thread, all threads / cores).
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const files = Number(arg("--files", "200"));
const jobs = Number(arg("--jobs", "2"));
const rounds = Number(arg("--rounds", "3"));
const sessions = path.resolve(arg("--sessions", path.join(root, "../shared/sessions")));
const bin = path.join(root, "bin/condense.js");
if (!existsSync(path.join(root, "dist/cli/main.js"))) {
  console.error("bench/metrics.js: dist/ is missing; run `npx tsc -p .` first");
  process.exit(2);
}

const sources = readdirSync(sessions)
  .filter((f) => f.endsWith(".jsonl"))
  .sort();
const dir = mkdtempSync(path.join(tmpdir(), "condense-bench-metrics-"));
const piDir = mkdtempSync(path.join(tmpdir(), "condense-bench-pi-"));
try {
  for (let i = 0; i < files; i++) {
    const src = sources[i % sources.length];
    copyFileSync(path.join(sessions, src), path.join(dir, `${String(i).padStart(3, "0")}-${src}`));
  }
  const env = { ...process.env, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1" };
  const ticks = 100; // USER_HZ
  const sampleThreads = (pid, into) => {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        into.set(tid, (Number(f[11]) + Number(f[12])) / ticks);
      }
    } catch {
      // the process is gone
    }
  };
  const runOnce = (j, workers = true) =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const child = spawn(process.execPath, [bin, "metrics", dir, "--json", "--quiet", "--jobs", String(j)], {
        env: workers ? env : { ...env, CONDENSE_WORKERS: "0" },
      });
      const cpu = new Map();
      const timer = setInterval(() => sampleThreads(child.pid, cpu), 25);
      const chunks = [];
      let stderr = "";
      child.stdout.on("data", (c) => chunks.push(c));
      child.stderr.on("data", (c) => (stderr += c));
      child.on("close", (code) => {
        clearInterval(timer);
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        if (code !== 0 && code !== 1) return reject(new Error(`metrics --jobs ${j} exited ${code}: ${stderr.slice(0, 500)}`));
        // JS threads: the main thread (tid = pid) and, with workers, the j − 1 busiest others.
        const main = cpu.get(String(child.pid)) ?? 0;
        const others = [...cpu]
          .filter(([tid]) => tid !== String(child.pid))
          .map(([, s]) => s)
          .sort((a, b) => b - a);
        const js = workers && j > 1 ? [main, ...others.slice(0, j - 1)] : [main];
        const total = [...cpu.values()].reduce((a, b) => a + b, 0);
        resolve({ ms, stdout: Buffer.concat(chunks).toString("utf8"), cpu: { js, total } });
      });
    });
  const estimate = (r) => Math.max(...r.cpu.js, r.cpu.total / availableParallelism());
  const cpuLine = (r) => `JS threads ${r.cpu.js.map((s) => s.toFixed(2)).join(" + ")} s, all threads ${r.cpu.total.toFixed(2)} s`;
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  console.log(
    `metrics over ${files} sessions (${sources.length} distinct), ${availableParallelism()} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const times = { one: [], pool: [], limit: [] };
  const est = { one: [], pool: [] };
  let out1 = "";
  let outN = "";
  await runOnce(1); // warm the page cache
  for (let round = 0; round < rounds; round++) {
    const a = await runOnce(1);
    const b = await runOnce(jobs);
    const c = await runOnce(jobs, false);
    times.one.push(a.ms);
    times.pool.push(b.ms);
    times.limit.push(c.ms);
    est.one.push(estimate(a));
    est.pool.push(estimate(b));
    out1 = a.stdout;
    outN = b.stdout;
    console.log(
      `round ${round + 1}: --jobs 1 ${(a.ms / 1000).toFixed(2)} s, --jobs ${jobs} workers ${(b.ms / 1000).toFixed(2)} s, ` +
        `--jobs ${jobs} one thread ${(c.ms / 1000).toFixed(2)} s`,
    );
    if (a.cpu.total > 0) console.log(`  cpu --jobs 1: ${cpuLine(a)}; --jobs ${jobs}: ${cpuLine(b)}`);
  }
  const m1 = median(times.one);
  const mN = median(times.pool);
  const mL = median(times.limit);
  const same = out1 === outN;
  console.log(`median: --jobs 1 ${(m1 / 1000).toFixed(2)} s, --jobs ${jobs} ${(mN / 1000).toFixed(2)} s, speedup ${(m1 / mN).toFixed(2)}x (target ≥ 1.6x)`);
  console.log(`without worker threads (p-limit in one thread): --jobs ${jobs} ${(mL / 1000).toFixed(2)} s, speedup ${(m1 / mL).toFixed(2)}x`);
  if (median(est.one) > 0) {
    console.log(
      `idle-machine estimate from thread CPU: --jobs 1 ${median(est.one).toFixed(2)} s, --jobs ${jobs} ${median(est.pool).toFixed(2)} s, ` +
        `speedup ${(median(est.one) / median(est.pool)).toFixed(2)}x`,
    );
  }
  console.log(
    `same document from both: ${same ? "yes" : "NO"}; load average now ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  if (!same) process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
  rmSync(piDir, { recursive: true, force: true });
}
