// Preloaded into a measured child (`node --import ./bench/probe.mjs …`): at exit it writes the
// process's CPU time (user + system, every thread: main, workers, GC and libuv helpers) and its
// peak RSS as one JSON line to the file named by CONDENSE_BENCH_PROBE.
import { appendFileSync } from "node:fs";

const out = process.env.CONDENSE_BENCH_PROBE;
if (out) {
  process.on("exit", () => {
    const cpu = process.cpuUsage();
    const usage = process.resourceUsage();
    appendFileSync(
      out,
      `${JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000, userMs: cpu.user / 1000, systemMs: cpu.system / 1000, maxRssBytes: usage.maxRSS * 1024 })}\n`,
    );
  });
}
