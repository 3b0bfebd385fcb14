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
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
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

const sources = readdirSync(sessions).filter((f) => f.endsWith(".jsonl")).sort();
const dir = mkdtempSync(path.join(tmpdir(), "condense-bench-metrics-"));
const piDir = mkdtempSync(path.join(tmpdir(), "condense-bench-pi-"));
try {
  for (let i = 0; i < files; i++) {
    const src = sources[i % sources.length];
    copyFileSync(path.join(sessions, src), path.join(dir, `${String(i).padStart(3, "0")}-${src}`));
  }
  const env = { ...process.env, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1" };
  const runOnce = (j, workers = true) => {
    const started = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [bin, "metrics", dir, "--json", "--quiet", "--jobs", String(j)], {
      env: workers ? env : { ...env, CONDENSE_WORKERS: "0" },
      encoding: "utf8",
      maxBuffer: 1 << 30,
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (r.status !== 0 && r.status !== 1) throw new Error(`metrics --jobs ${j} exited ${r.status}: ${r.stderr.slice(0, 500)}`);
    return { ms, stdout: r.stdout };
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

  console.log(`metrics over ${files} sessions (${sources.length} distinct), ${availableParallelism()} cores, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const times = { one: [], pool: [], limit: [] };
  let out1 = "";
  let outN = "";
  runOnce(1); // warm the page cache
  for (let round = 0; round < rounds; round++) {
    const a = runOnce(1);
    const b = runOnce(jobs);
    const c = runOnce(jobs, false);
    times.one.push(a.ms);
    times.pool.push(b.ms);
    times.limit.push(c.ms);
    out1 = a.stdout;
    outN = b.stdout;
    console.log(
      `round ${round + 1}: --jobs 1 ${(a.ms / 1000).toFixed(2)} s, --jobs ${jobs} workers ${(b.ms / 1000).toFixed(2)} s, ` +
        `--jobs ${jobs} one thread ${(c.ms / 1000).toFixed(2)} s`,
    );
  }
  const m1 = median(times.one);
  const mN = median(times.pool);
  const mL = median(times.limit);
  const same = out1 === outN;
  console.log(`median: --jobs 1 ${(m1 / 1000).toFixed(2)} s, --jobs ${jobs} ${(mN / 1000).toFixed(2)} s, speedup ${(m1 / mN).toFixed(2)}x (target ≥ 1.6x)`);
  console.log(`without worker threads (p-limit in one thread): --jobs ${jobs} ${(mL / 1000).toFixed(2)} s, speedup ${(m1 / mL).toFixed(2)}x`);
  console.log(`same document from both: ${same ? "yes" : "NO"}; load average now ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  if (!same) process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
  rmSync(piDir, { recursive: true, force: true });
}
