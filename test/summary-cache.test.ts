/**
 * The summary cache and `--estimate` (issue 16 "paid twice"): answers are kept by content (request
 * kind, model, thinking level, system prompt, user message) in the platform's cache folder, so
 * `run --dry-run --model` then `run --model` asks the local server once per request in total; the
 * estimate calls no model and counts what the run will send, with pi-ai's price.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cachingSummarizer, summaryCacheKey } from "../src/summarize/cache.js";
import { cacheFolder, SummaryStore, summaryStore } from "../src/summarize/cache-store.js";
import { BATCH_INSTRUCTIONS, batchRequest } from "../src/summarize/prompt.js";
import type { Summarizer, SummaryBatch } from "../src/summarize/types.js";
import { runCli } from "./cli-harness.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";
import { makeTempDir, SHARED_SESSIONS } from "./helpers.js";

describe("the cache folder follows the platform", () => {
  const home = "/home/u";
  it.each([
    ["linux", {}, "/home/u/.cache/condense"],
    ["linux", { XDG_CACHE_HOME: "/xdg" }, "/xdg/condense"],
    ["linux", { XDG_CACHE_HOME: "relative/xdg" }, "/home/u/.cache/condense"],
    ["freebsd", {}, "/home/u/.cache/condense"],
    ["darwin", { XDG_CACHE_HOME: "/xdg" }, "/home/u/Library/Caches/condense"],
    ["win32", {}, path.join("/home/u", "AppData", "Local", "condense", "Cache")],
    ["win32", { LOCALAPPDATA: "/lad" }, path.join("/lad", "condense", "Cache")],
    ["linux", { CONDENSE_CACHE_DIR: "/tmp/c", XDG_CACHE_HOME: "/xdg" }, "/tmp/c"],
    ["darwin", { CONDENSE_CACHE_DIR: "/tmp/c" }, "/tmp/c"],
  ] as const)("%s %j → %s", (platform, env, expected) => {
    expect(cacheFolder(env, platform as NodeJS.Platform, home)).toBe(expected);
  });

  it("--no-cache and CONDENSE_CACHE=off mean none", () => {
    expect(summaryStore(false, { CONDENSE_CACHE_DIR: "/tmp/c" })).toBeNull();
    expect(summaryStore(true, { CONDENSE_CACHE: "off", CONDENSE_CACHE_DIR: "/tmp/c" })).toBeNull();
    expect(summaryStore(true, { CONDENSE_CACHE_DIR: "/tmp/c" })?.folder).toBe("/tmp/c");
  });
});

describe("cachingSummarizer", () => {
  const tmp = makeTempDir("cache-unit");
  afterAll(tmp.cleanup);
  const batch = (result: string): SummaryBatch => ({
    assistantText: "look",
    calls: [{ toolName: "bash", args: { command: "ls" }, resultText: result, isError: false }],
  });
  /** A model-backed summarizer stand-in that counts its calls and answers by the batch's text. */
  const counting = (name: string, thinking: string) => {
    const calls: string[] = [];
    const s: Summarizer = {
      name,
      local: false,
      thinking,
      summarizeBatch: async (b) => {
        calls.push(b.calls[0].resultText);
        return { ok: true, text: `- [[1:bash]] saw ${b.calls[0].resultText} (${name}, ${thinking})`, model: name, usage: { input: 10, output: 2, cost: 0.01 } };
      },
      fuseRange: async (bodies) => {
        calls.push(`fuse ${bodies.length}`);
        return { ok: true, text: `fused ${bodies.join("+")}`, model: name };
      },
    };
    return { s, calls };
  };

  it("answers a request seen before from the store, with no usage; any part of the key changes it", async () => {
    const store = new SummaryStore(path.join(tmp.dir, "a"));
    const first = counting("p/m", "off");
    const cached = cachingSummarizer(first.s, store);
    const answer = await cached.summarizeBatch(batch("one"));
    expect(answer).toEqual({ ok: true, text: "- [[1:bash]] saw one (p/m, off)", model: "p/m", usage: { input: 10, output: 2, cost: 0.01 } });
    expect(await cached.summarizeBatch(batch("one"))).toEqual({ ok: true, text: "- [[1:bash]] saw one (p/m, off)", model: "p/m", reused: "cache" });
    expect(await cached.fuseRange(["a", "b"])).toMatchObject({ ok: true, text: "fused a+b" });
    expect(await cached.fuseRange(["a", "b"])).toMatchObject({ ok: true, text: "fused a+b", reused: "cache" });
    expect(first.calls).toEqual(["one", "fuse 2"]);
    // Another batch text, model or thinking level: asked again.
    await cached.summarizeBatch(batch("two"));
    const otherModel = counting("p/other", "off");
    await cachingSummarizer(otherModel.s, store).summarizeBatch(batch("one"));
    const thinking = counting("p/m", "high");
    await cachingSummarizer(thinking.s, store).summarizeBatch(batch("one"));
    expect([first.calls, otherModel.calls, thinking.calls]).toEqual([["one", "fuse 2", "two"], ["one"], ["one"]]);
    // The file is where the key says, and holds the answer.
    const key = summaryCacheKey("batch", { model: "p/m", thinking: "off" }, batchRequest(batch("one")));
    expect(batchRequest(batch("one")).system).toBe(BATCH_INSTRUCTIONS);
    expect(JSON.parse(readFileSync(store.pathOf(key), "utf8"))).toMatchObject({ text: "- [[1:bash]] saw one (p/m, off)", model: "p/m" });
  });

  it("failures are not stored; a fallback's answer is stored under the fallback's name", async () => {
    const store = new SummaryStore(path.join(tmp.dir, "b"));
    let n = 0;
    const flaky: Summarizer = {
      name: "p/m",
      local: false,
      summarizeBatch: async () =>
        ++n === 1 ? { ok: false, kind: "transient", reason: "503" } : { ok: true, text: "- [[1:bash]] by the fallback", model: "p/fallback" },
      fuseRange: async () => ({ ok: false, kind: "transient", reason: "503" }),
    };
    const cached = cachingSummarizer(flaky, store);
    expect((await cached.summarizeBatch(batch("x"))).ok).toBe(false);
    expect((await cached.summarizeBatch(batch("x"))).ok).toBe(true);
    // Not found under p/m: asked a third time.
    expect(await cached.summarizeBatch(batch("x"))).toMatchObject({ ok: true, text: "- [[1:bash]] by the fallback" });
    expect(n).toBe(3);
    const underFallback = summaryCacheKey("batch", { model: "p/fallback", thinking: "off" }, batchRequest(batch("x")));
    expect(existsSync(store.pathOf(underFallback))).toBe(true);
  });

  it("a FIFO or a folder where an answer's file goes: read as no answer, at once (not waited on); the model is asked", async () => {
    const store = new SummaryStore(path.join(tmp.dir, "fifo"));
    const { s, calls } = counting("p/m", "off");
    const cached = cachingSummarizer(s, store);
    const keyOf = (text: string) => summaryCacheKey("batch", { model: "p/m", thinking: "off" }, batchRequest(batch(text)));
    mkdirSync(path.dirname(store.pathOf(keyOf("f"))), { recursive: true });
    execFileSync("mkfifo", [store.pathOf(keyOf("f"))]);
    mkdirSync(store.pathOf(keyOf("d")), { recursive: true });
    expect(await store.get(keyOf("f"))).toBeNull();
    expect(await store.get(keyOf("d"))).toBeNull();
    expect(await cached.summarizeBatch(batch("f"))).toMatchObject({ ok: true, text: "- [[1:bash]] saw f (p/m, off)" });
    expect(await cached.summarizeBatch(batch("d"))).toMatchObject({ ok: true, text: "- [[1:bash]] saw d (p/m, off)" });
    expect(calls).toEqual(["f", "d"]);
  }, 10_000);

  it("a folder that cannot be written: the answers still come, one notice", async () => {
    const blocked = path.join(tmp.dir, "blocked");
    writeFileSync(blocked, "a file where the folder should be");
    const notices: string[] = [];
    const { s, calls } = counting("p/m", "off");
    const cached = cachingSummarizer(s, new SummaryStore(blocked), (m) => notices.push(m));
    expect((await cached.summarizeBatch(batch("1"))).ok).toBe(true);
    expect((await cached.summarizeBatch(batch("2"))).ok).toBe(true);
    expect(calls).toEqual(["1", "2"]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^the summary cache .*blocked cannot be written \((ENOTDIR|EEXIST)\); going on without storing answers$/);
  });
});

describe("run --model with the cache, and --estimate, through the local server", () => {
  let server: Awaited<ReturnType<typeof startFakeLlmServer>>;
  const tmp = makeTempDir("cache-cli");
  const cache = path.join(tmp.dir, "cache");
  const env = () => ({ PI_CODING_AGENT_DIR: tmp.dir, CONDENSE_CACHE: "on", CONDENSE_CACHE_DIR: cache, NO_COLOR: "1" });
  const SOURCE = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
  const copy = (name: string) => {
    const file = path.join(tmp.dir, name);
    copyFileSync(SOURCE, file);
    return file;
  };
  beforeAll(async () => {
    server = await startFakeLlmServer();
    writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    writeFileSync(
      path.join(tmp.dir, "models.json"),
      JSON.stringify({
        providers: {
          local: {
            baseUrl: server.openaiBaseUrl,
            api: "openai-completions",
            apiKey: "k",
            models: [{ id: "m1", cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } }],
          },
        },
      }),
    );
  });
  afterAll(async () => {
    await server.close();
    tmp.cleanup();
  });

  it("--estimate calls no model; --dry-run --model then run --model asks once per request in total", async () => {
    const file = copy("s.jsonl");
    const before = readFileSync(file);
    server.requests.length = 0;
    const estimate = await runCli(["run", file, "--model", "local/m1", "--estimate", "--json"], env());
    expect(estimate.code).toBe(0);
    expect(server.requests).toHaveLength(0);
    const e = JSON.parse(estimate.stdout).sessions[0].estimate;

    const dry = await runCli(["run", file, "--model", "local/m1", "--dry-run", "--json"], env());
    expect(dry.code).toBe(0);
    expect(readFileSync(file).equals(before)).toBe(true);
    const asked = server.requests.length;
    const batchRequests = server.requests.filter((r) => r.system === BATCH_INSTRUCTIONS);
    // One request per distinct batch, one per chain fusion, all different.
    expect(new Set(server.requests.map((r) => r.system + r.user)).size).toBe(asked);
    expect(JSON.parse(dry.stdout).sessions[0].usage).toMatchObject({ calls: asked, reused: { cache: 0, session: 0 } });
    // The estimate named the same batch requests, their input tokens exactly (the server counts
    // ceil(chars / 4) too) and the cost at $3 / $15 per million.
    expect(e.model).toBe("local/m1");
    expect(e.batches).toBe(batchRequests.length);
    expect(e.fusions).toBe(asked - batchRequests.length);
    expect(e.cached).toBe(0);
    const batchInput = batchRequests.reduce((n, r) => n + Math.ceil((r.system.length + r.user.length) / 4), 0);
    expect(e.inputTokens).toBeGreaterThan(batchInput);
    expect(e.cost).toBeCloseTo((e.inputTokens * 3 + e.outputTokens * 15) / 1e6, 10);
    expect(e.priced).toBe(true);

    const real = await runCli(["run", file, "--model", "local/m1"], env());
    expect(real.code).toBe(0);
    expect(server.requests).toHaveLength(asked);
    expect(real.stderr).toBe("");
    expect(real.stdout).toContain(`${file}: no call to local/m1 · ${asked} answers from the summary cache`);
    expect(readFileSync(file).length).toBeGreaterThan(before.length);

    // The same summaries as a run that asks the model (a fresh copy, no cache).
    const fresh = copy("fresh.jsonl");
    await runCli(["run", fresh, "--model", "local/m1", "--no-cache"], env());
    expect(server.requests).toHaveLength(2 * asked);
    const summaries = (f: string) =>
      readFileSync(f, "utf8")
        .split("\n")
        .filter((l) => l.includes('"customType":"context-prune-summary"') || l.includes('"customType":"context-prune-chain"'))
        .map((l) => {
          const { content, data } = JSON.parse(l);
          return JSON.stringify([content, data?.rangeSummaryText]);
        });
    expect(summaries(file)).toEqual(summaries(fresh));
    expect(summaries(file).length).toBeGreaterThan(0);
  });

  it("--estimate after a dry run: everything is cached, nothing to pay", async () => {
    const file = copy("again.jsonl");
    server.requests.length = 0;
    const r = await runCli(["run", file, "--model", "local/m1", "--estimate"], env());
    expect(r.code).toBe(0);
    expect(server.requests).toHaveLength(0);
    // Labelled as every other table labels a session: short id, date, first prompt (not the file name).
    expect(r.stdout).toMatch(/│ 019dce0b 2026-04-27 we're in the directory of our bespoke coding harness [^│]+│\s+0 │\s+0 │\s+\d+ │\s+0 │\s+0 │ \$0\.0000 │/);
    expect(r.stdout).not.toContain("again.jsonl");
    expect(r.stdout).toContain("estimate: no model was called · model local/m1");
  });

  it("--estimate at 80 columns: the compact layout, sessions told apart by label", async () => {
    const files = [copy("narrow-a.jsonl"), copy("narrow-b.jsonl")];
    const r = await runCli(["run", ...files, "--model", "local/m1", "--estimate", "--no-cache"], { ...env(), COLUMNS: "80" });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(80);
    expect(lines[1]).toBe("│ session                           │ requests │ cached │    ~tokens │   ~cost │");
    // Two copies of one session: labelled by file name, date and the first prompt, cut to fit.
    expect(lines[3]).toMatch(/^│ narrow-a\.jsonl 2026-04-27 we're … │ +[1-9]\d* │ +0 │ +\d+\.\dk\/\d+(\.\dk)? │ \$\d\.\d{4} │$/);
    expect(lines[4]).toMatch(/^│ narrow-b\.jsonl 2026-04-27 we're … │/);
    expect(lines[5]).toMatch(/^│ total \(2\) +│ +[1-9]\d* │ +0 │/);
    expect(r.stdout).toContain("requests = batch summaries + chain fusions · ~tokens = input/output");
    // At 120 columns, the wide table.
    const wide = await runCli(["run", files[0], "--model", "local/m1", "--estimate", "--no-cache"], { ...env(), COLUMNS: "120" });
    expect(wide.stdout.split("\n")[1]).toMatch(/^│ session +│ batches │ fusions │ cached │ ~input tokens │ ~output tokens │ +~cost │$/);
  });

  it("--estimate needs no API key; --no-cache neither reads nor stores", async () => {
    const noKey = path.join(tmp.dir, "nokey");
    mkdirSync(noKey);
    writeFileSync(
      path.join(noKey, "models.json"),
      JSON.stringify({ providers: { local: { baseUrl: server.openaiBaseUrl, api: "openai-completions", models: [{ id: "m1" }] } } }),
    );
    writeFileSync(path.join(noKey, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    const file = copy("nokey.jsonl");
    const r = await runCli(["run", file, "--model", "local/m1", "--estimate", "--no-cache"], { ...env(), PI_CODING_AGENT_DIR: noKey });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("pi-ai knows no price for local/m1: cost shown as $0");

    const other = path.join(tmp.dir, "other-cache");
    const before = server.requests.length;
    await runCli(["run", copy("nc.jsonl"), "--model", "local/m1", "--no-cache", "--dry-run"], { ...env(), CONDENSE_CACHE_DIR: other });
    expect(server.requests.length).toBeGreaterThan(before);
    expect(existsSync(other)).toBe(false);
  });

  it("an unwritable cache folder never fails the run: one warning", async () => {
    const ro = path.join(tmp.dir, "ro");
    mkdirSync(ro);
    chmodSync(ro, 0o500);
    const writable = (() => {
      try {
        writeFileSync(path.join(ro, "probe"), "");
        rmSync(path.join(ro, "probe"));
        return true;
      } catch {
        return false;
      }
    })();
    // As root every folder is writable: use a file where the folder should be instead.
    const folder = writable ? path.join(tmp.dir, "a-file") : ro;
    if (writable) writeFileSync(folder, "");
    const file = copy("ro.jsonl");
    const r = await runCli(["run", file, "--model", "local/m1"], { ...env(), CONDENSE_CACHE_DIR: folder });
    expect(r.code).toBe(0);
    expect(r.stderr.split("\n").filter((l) => l.includes("summary cache"))).toHaveLength(1);
    expect(r.stderr).toMatch(/^warning: .*ro\.jsonl: the summary cache .* cannot be written/m);
    chmodSync(ro, 0o700);
    expect(readdirSync(ro)).toEqual([]);
  });
});
