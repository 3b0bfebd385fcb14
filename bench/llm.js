#!/usr/bin/env node
// Bench: model-written summaries in parallel (issue 5). A local OpenAI-compatible streaming
// server (its own process) answers every call after 200 ms; a synthetic session holds 96
// summarizable batches.
// For --concurrency 1, 8 and 32 we time the whole main job in memory (planRun: index rebuild,
// capture, flush with every summarizer call, bookkeeping) and print the wall time as a ratio to
// the ideal 96 × 0.2 s / concurrency. Target: ≥ 0.9 at 32 (issue 18), and condense's own CPU per
// call (the plan with a model client that answers at once) under 1 ms.
// Both streaming APIs the server speaks are measured (OpenAI chat completions, Anthropic
// messages): pi-ai's client path costs differ between them.
// Needs the build (`npx tsc -p .`).
// Usage: node bench/llm.js [--api openai|anthropic|both] [--batches N] [--delay MS] [--trials N] [--levels 1,8,32] [--json]
import { fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startFakeLlmServer } from "../test/fake-llm-server.mjs";

// Server role: the server runs in its own process, as a real one would, so its CPU time is not
// charged to condense's event loop.
if (process.argv[2] === "--serve") {
  const delayMs = Number(process.argv[3]);
  let count = 0;
  const server = await startFakeLlmServer({
    plan: () => {
      count++;
      return { delayMs };
    },
  });
  process.on("message", async (m) => {
    if (m === "count") process.send({ count });
    if (m === "reset") count = 0;
    if (m === "close") {
      await server.close();
      process.exit(0);
    }
  });
  process.send({ baseUrl: { openai: server.openaiBaseUrl, anthropic: server.anthropicBaseUrl } });
  await new Promise(() => {});
}

const dist = new URL("../dist/", import.meta.url);
const { planRun } = await import(new URL("pipeline/plan.js", dist).href);
const { sessionView } = await import(new URL("pipeline/view.js", dist).href);
const { loadSession } = await import(new URL("session/session.js", dist).href);
const { createSummarizer } = await import(new URL("summarize/select.js", dist).href);
const { defaultConfig } = await import(new URL("config/config.js", dist).href);
const { createLlmSummarizer } = await import(new URL("summarize/llm.js", dist).href);

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const BATCHES = arg("--batches", 96);
const DELAY_MS = arg("--delay", 200);
const TRIALS = arg("--trials", 5);
const apiArg = process.argv.includes("--api") ? process.argv[process.argv.indexOf("--api") + 1] : "both";
const APIS = apiArg === "both" ? ["openai", "anthropic"] : [apiArg];
const LEVELS = process.argv.includes("--levels") ? process.argv[process.argv.indexOf("--levels") + 1].split(",").map(Number) : [1, 8, 32];

/** A v3 session: one request, BATCHES assistant tool turns (one bash call each, ~1.5 KB of distinct output), a final reply. */
function syntheticSession(batches) {
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  const lines = [{ type: "session", version: 3, id: "0199c0de-0000-7000-8000-0000000be7c4", timestamp: new Date(t0).toISOString(), cwd: "/bench" }];
  let parent = null;
  let n = 0;
  const push = (entry) => {
    n++;
    const id = n.toString(16).padStart(8, "0");
    lines.push({ ...entry, id, parentId: parent, timestamp: new Date(t0 + n * 1000).toISOString() });
    parent = id;
  };
  const usage = { input: 100, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 110, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  const assistant = (content, stopReason) => ({
    type: "message",
    message: { role: "assistant", content, api: "openai-completions", provider: "local", model: "m1", usage, stopReason, timestamp: t0 + (n + 1) * 1000 },
  });
  push({ type: "message", message: { role: "user", content: [{ type: "text", text: "Build and test every module." }], timestamp: t0 + 1000 } });
  for (let b = 0; b < batches; b++) {
    const id = `call_${b}`;
    push(assistant([{ type: "toolCall", id, name: "bash", arguments: { command: `make test MODULE=m${b}` } }], "toolUse"));
    const output = Array.from({ length: 30 }, (_, i) => `m${b}: step ${i} of the build for module ${b} finished in ${(b * 31 + i) % 97} ms`).join("\n");
    push({
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: id,
        toolName: "bash",
        content: [{ type: "text", text: output }],
        isError: false,
        timestamp: t0 + (n + 1) * 1000,
      },
    });
  }
  push(assistant([{ type: "text", text: "All modules build and pass." }], "stop"));
  return lines.map((l) => `${JSON.stringify(l)}\n`).join("");
}

const child = fork(fileURLToPath(import.meta.url), ["--serve", String(DELAY_MS)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
const ask = (message, key) =>
  new Promise((resolve) => {
    const on = (m) => {
      if (m && key in m) {
        child.off("message", on);
        resolve(m[key]);
      }
    };
    child.on("message", on);
    if (message) child.send(message);
  });
const baseUrl = await ask(null, "baseUrl");
const dir = mkdtempSync(join(tmpdir(), "condense-bench-llm-"));
try {
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify({
      providers: {
        openai: { baseUrl: baseUrl.openai, api: "openai-completions", apiKey: "none", models: [{ id: "m1" }] },
        anthropic: { baseUrl: baseUrl.anthropic, api: "anthropic-messages", apiKey: "none", models: [{ id: "m1" }] },
      },
    }),
  );
  const sessionPath = join(dir, "bench.jsonl");
  writeFileSync(sessionPath, syntheticSession(BATCHES));
  const env = { ...process.env, PI_CODING_AGENT_DIR: dir };
  const config = defaultConfig();

  let lastCpuMs = 0;
  const runOnce = async (api, concurrency) => {
    const session = await loadSession(sessionPath);
    const summarizer = await createSummarizer({ model: `${api}/m1`, cache: false }, config, session, { env });
    child.send("reset");
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    const plan = await planRun(sessionView(session, config), { summarizer, concurrency, nowMs: Date.parse("2026-02-01T00:00:00Z"), targetPath: sessionPath });
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(cpu0);
    lastCpuMs = (cpu.user + cpu.system) / 1000;
    const calls = await ask("count", "count");
    if (plan.report.batches.summarized !== BATCHES || calls !== BATCHES) {
      throw new Error(`expected ${BATCHES} summarized batches and calls, got ${plan.report.batches.summarized} / ${calls}`);
    }
    return wallMs;
  };

  // condense's own work: the same plan with a model client that answers at once (no HTTP, no SDK),
  // so what is left is condense's CPU — prompts, answers, refs, entries, the rest of the plan.
  const ownWork = async () => {
    const answer = (context) => {
      const labels = [...String(context.messages.at(-1)?.content ?? "").matchAll(/\[\[(\d+):(\w+)\]\]/g)].map((m) => m[0]);
      const text = labels.map((l) => `- ${l} ran the build of one module: every step finished`).join("\n") || "- done";
      return {
        role: "assistant",
        content: [{ type: "text", text }],
        api: "openai-completions",
        provider: "stub",
        model: "m1",
        usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop",
        timestamp: 0,
      };
    };
    const models = {
      streamSimple: (_model, context) => ({
        async *[Symbol.asyncIterator]() {},
        result: async () => answer(context),
      }),
    };
    const model = {
      id: "m1",
      name: "m1",
      api: "openai-completions",
      provider: "stub",
      baseUrl: "http://127.0.0.1:1",
      reasoning: false,
      input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128000,
      maxTokens: 4096,
    };
    const cpus = [];
    for (let t = 0; t < TRIALS + 2; t++) {
      const session = await loadSession(sessionPath);
      const summarizer = createLlmSummarizer({ models, model, idleTimeoutMs: 60_000, maxTimeoutMs: 120_000 });
      const cpu0 = process.cpuUsage();
      const plan = await planRun(sessionView(session, config), {
        summarizer,
        concurrency: 32,
        nowMs: Date.parse("2026-02-01T00:00:00Z"),
        targetPath: sessionPath,
      });
      const cpu = process.cpuUsage(cpu0);
      if (plan.report.batches.summarized !== BATCHES) throw new Error(`own work: ${plan.report.batches.summarized} of ${BATCHES} batches summarized`);
      if (t >= 2) cpus.push((cpu.user + cpu.system) / 1000);
    }
    cpus.sort((a, b) => a - b);
    return cpus[Math.floor(cpus.length / 2)] / BATCHES;
  };
  const ownMsPerCall = await ownWork();

  // Several trials per level (concurrency 1 once: it takes BATCHES × DELAY_MS): the best and the
  // median wall time are reported; the target is checked on the median.
  const results = [];
  for (const api of APIS) {
    // Warm-up (not timed): loads the API's SDK and opens connections, as any real run does once.
    await runOnce(api, 8);
    for (const concurrency of LEVELS) {
      const walls = [];
      const cpus = [];
      for (let t = 0; t < (concurrency === 1 ? 1 : TRIALS); t++) {
        walls.push(await runOnce(api, concurrency));
        cpus.push(lastCpuMs);
      }
      cpus.sort((a, b) => a - b);
      walls.sort((a, b) => a - b);
      const median = walls[Math.floor(walls.length / 2)];
      const idealMs = (BATCHES * DELAY_MS) / concurrency;
      results.push({
        api,
        concurrency,
        trials: walls.length,
        wallMs: Math.round(median),
        bestWallMs: Math.round(walls[0]),
        idealMs: Math.round(idealMs),
        ratio: Number((idealMs / median).toFixed(3)),
        bestRatio: Number((idealMs / walls[0]).toFixed(3)),
        // the process's CPU time for the whole job (median: condense and the model client), and per call
        cpuMs: Math.round(cpus[Math.floor(cpus.length / 2)]),
        cpuMsPerCall: Number((cpus[Math.floor(cpus.length / 2)] / BATCHES).toFixed(2)),
      });
    }
  }
  if (process.argv.includes("--json")) {
    console.log(
      JSON.stringify({ bench: "llm", batches: BATCHES, delayMs: DELAY_MS, cpus: availableParallelism(), loadavg: loadavg(), ownMsPerCall, results }, null, 2),
    );
  } else {
    console.log(`llm summaries: ${BATCHES} batches, server answers after ${DELAY_MS} ms (ratio = ideal / wall; target ≥ 0.9 at 32)`);
    console.log(
      `  ${availableParallelism()} CPUs, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")} at the end`,
    );
    console.log(`  condense's own CPU per call (the whole plan over ${BATCHES} calls, model client excluded): ${ownMsPerCall.toFixed(2)} ms (target < 1 ms)`);
    for (const r of results) {
      console.log(
        `  ${r.api.padEnd(9)} concurrency ${String(r.concurrency).padStart(2)}: wall ${(r.wallMs / 1000).toFixed(2)} s (median of ${r.trials}; best ${(r.bestWallMs / 1000).toFixed(2)} s), ` +
          `ideal ${(r.idealMs / 1000).toFixed(2)} s, ratio ${r.ratio.toFixed(3)} (best ${r.bestRatio.toFixed(3)}); CPU ${r.cpuMs} ms (${r.cpuMsPerCall} ms per call)`,
      );
    }
  }
  process.exitCode = results.every((r) => r.concurrency !== 32 || r.ratio >= 0.9) && ownMsPerCall < 1 ? 0 : 1;
} finally {
  child.send("close");
  rmSync(dir, { recursive: true, force: true });
}
