/**
 * `condense run --model …` end to end, in process, against the local streaming server:
 * appended bytes do not depend on --concurrency or on the order answers arrive in, and Ctrl-C
 * aborts the in-flight calls, writes nothing and exits 130.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { progressLine } from "../src/cli/commands/run.js";
import { runCli } from "./cli-harness.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";

const SESSIONS = path.resolve(__dirname, "../../shared/sessions");
type Server = Awaited<ReturnType<typeof startFakeLlmServer>>;

let server: Server;
let dir: string;
beforeAll(async () => {
  server = await startFakeLlmServer();
  dir = mkdtempSync(path.join(tmpdir(), "condense-llm-cli-"));
  // A user with the pi-condense extension switched on (else run warns on stderr that it is off).
  writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
  writeFileSync(
    path.join(dir, "models.json"),
    JSON.stringify({
      providers: {
        local: {
          baseUrl: server.openaiBaseUrl,
          api: "openai-completions",
          apiKey: "none",
          models: [{ id: "m1", cost: { input: 1, output: 4, cacheRead: 0, cacheWrite: 0 } }],
        },
      },
    }),
  );
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const ENV = () => ({ PI_CODING_AGENT_DIR: dir, CONDENSE_NOW: "2026-03-01T12:00:00.000Z" });

describe("condense run --model through the local server", () => {
  it("appends identical bytes at --concurrency 1 and 16, whatever order the answers arrive in", async () => {
    const source = path.join(SESSIONS, "kimchi-session.v3.jsonl");
    const original = readFileSync(source);
    const appended: Buffer[] = [];
    for (const concurrency of ["1", "16"]) {
      // One path for both runs: stock-Pi stubs name the session file when condense query would not find it.
      const copy = path.join(dir, "kimchi-concurrency.jsonl");
      copyFileSync(source, copy);
      server.requests.length = 0;
      // Random delays: answers come back in any order; each batch's answer depends on its prompt only.
      server.setPlan(() => ({ delayMs: Math.floor(Math.random() * 40) }));
      const { code, stderr } = await runCli(["run", copy, "--model", "local/m1", "--concurrency", concurrency, "--json"], ENV());
      expect(stderr).toBe("");
      expect(code).toBe(0);
      // 31 batch summaries plus one range-fusion call for each of the 3 compressed chains.
      expect(server.requests.length).toBe(34);
      if (concurrency === "1") expect(server.maxActive).toBe(1);
      const bytes = readFileSync(copy);
      expect(bytes.subarray(0, original.length).equals(original)).toBe(true);
      appended.push(bytes.subarray(original.length));
    }
    expect(server.maxActive).toBeGreaterThan(1);
    expect(server.maxActive).toBeLessThanOrEqual(16);
    expect(appended[0].length).toBeGreaterThan(0);
    expect(appended[1].equals(appended[0])).toBe(true);
    const text = appended[0].toString("utf8");
    expect(text.match(/"customType":"context-prune-summary"/g)).toHaveLength(31);
    expect(text).toContain('"content":"- `t1` ran ');
  });

  it("reports usage in the report and --json", async () => {
    const copy = path.join(dir, "usage.jsonl");
    copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), copy);
    server.setPlan(() => ({ inputTokens: 1000, outputTokens: 100 }));
    const { code, stdout } = await runCli(["run", copy, "--model", "local/m1", "--json"], ENV());
    expect(code).toBe(0);
    const report = JSON.parse(stdout).sessions[0];
    expect(report.summarizer).toBe("local/m1");
    expect(report.usage).toEqual({ input: 3000, output: 300, cost: expect.closeTo(0.0042, 12), calls: 3, reused: { cache: 0, session: 0 } });
    const stats = readFileSync(copy, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .find((e) => e.customType === "context-prune-stats");
    expect(stats.data).toMatchObject({ totalInputTokens: 3000, totalOutputTokens: 300, callCount: 3 });
    expect(stats.data.totalCost).toBeCloseTo(0.0042, 12);
    copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), copy);
    const human = await runCli(["run", copy, "--model", "local/m1"], ENV());
    expect(human.stdout).toContain(`${copy}: 3 calls to local/m1 · 3,000 input + 300 output tokens · $0.0042`);
  });

  it("a missing key is a usage error naming the variable; nothing is written", async () => {
    const copy = path.join(dir, "nokey.jsonl");
    copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), copy);
    const before = readFileSync(copy);
    const { code, stderr } = await runCli(["run", copy, "--model", "groq/" + "llama-3.1-8b-instant"], { ...ENV(), GROQ_API_KEY: "" });
    expect(code).toBe(2);
    expect(stderr).toContain('no API key for provider "groq": set GROQ_API_KEY');
    expect(readFileSync(copy).equals(before)).toBe(true);
  });

  it("Ctrl-C aborts in-flight calls, writes nothing and exits 130", async () => {
    const copy = path.join(dir, "interrupted.jsonl");
    copyFileSync(path.join(SESSIONS, "kimchi-session.v3.jsonl"), copy);
    const before = readFileSync(copy);
    server.requests.length = 0;
    let sent = false;
    server.setPlan(() => {
      if (!sent) {
        sent = true;
        setTimeout(() => process.emit("SIGINT"), 50);
      }
      return { delayMs: 30_000 };
    });
    const listeners = process.listenerCount("SIGINT");
    const started = Date.now();
    const { code, stderr } = await runCli(["run", copy, "--model", "local/m1", "--concurrency", "8"], ENV());
    expect(code).toBe(130);
    expect(stderr).toBe(`error: ${copy}: interrupted; nothing was written\n`);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readFileSync(copy).equals(before)).toBe(true);
    expect(server.requests.length).toBe(8);
    expect(process.listenerCount("SIGINT")).toBe(listeners);
  });
});

/** A copy of the three-batch fixture, its bytes, and a run of it whose session model (anthropic/…) has no key: no fallback. */
async function failingRun(name: string, plan: Parameters<Server["setPlan"]>[0], extra: string[] = []) {
  const copy = path.join(dir, name);
  copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), copy);
  const before = readFileSync(copy);
  server.setPlan(plan);
  const run = await runCli(["run", copy, "--model", "local/m1", ...extra], { ...ENV(), ANTHROPIC_API_KEY: undefined });
  return { copy, before, ...run };
}

const ERROR_500 = 'local/m1: 500: {"type":"error","message":"fake server error 500"}';
/** The one notice of a run whose model fails with no fallback: the session's model (anthropic/…) has no key here. */
const noFallback = (copy: string, reason: string) =>
  `warning: ${copy}: local/m1 is failing (${reason} (4 attempts)) and there is no fallback: the session's model anthropic/claude-sonnet-4-5 ` +
  'cannot be used (no API key for provider "anthropic"); name one with --fallback-model provider/id\n';

describe("batches whose summary fails (the model never answered)", () => {
  it("every call answered 500: exit 1, the file unchanged, one line with the count and the reason — never 'nothing to write'", async () => {
    const { copy, before, code, stdout, stderr } = await failingRun("all-500.jsonl", () => ({ status: 500 }));
    expect(code).toBe(1);
    expect(readFileSync(copy).equals(before)).toBe(true);
    expect(stderr).toBe(`${noFallback(copy, ERROR_500)}error: ${copy}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them\n`);
    expect(stdout).toContain(`${copy}: not written (batches failed) for stock Pi`);
    expect(stdout).not.toContain("nothing to write");
    expect(stdout).not.toContain("nothing to do");
    expect(stdout).toContain(`${copy}: batch at turn 0 stays raw: transient: ${ERROR_500} (4 attempts)`);
  }, 30_000);

  it("every connection closed, also on a dry run and with --json: exit 1, 'could not be reached'", async () => {
    const line = (copy: string, state: string) =>
      `${noFallback(copy, "local/m1: Connection error.: socket hang up (ECONNRESET)")}error: ${copy}: 3 of 3 batches failed (local/m1 could not be reached: ECONNRESET); ${state} — run again when the model is reachable\n`;
    const dry = await failingRun("hang-up.jsonl", () => ({ hangUp: true }), ["--dry-run"]);
    expect(dry.code).toBe(1);
    expect(dry.stderr).toBe(line(dry.copy, "nothing would be written"));
    expect(dry.stdout).toContain(`${dry.copy}: would not be written (batches failed) for stock Pi`);
    const json = await failingRun("hang-up.jsonl", () => ({ hangUp: true }), ["--json"]);
    expect(json.code).toBe(1);
    expect(readFileSync(json.copy).equals(json.before)).toBe(true);
    expect(json.stderr).toBe(line(json.copy, "nothing was written"));
    const report = JSON.parse(json.stdout).sessions[0];
    expect(report.batches).toMatchObject({ captured: 3, summarized: 0, failed: 3 });
    expect(report.written).toBeNull();
    expect(JSON.parse(json.stdout).warnings).toEqual([json.stderr.split("\n")[0].replace(/^warning: /, "")]);
  }, 40_000);

  it("one batch fails, two are summarized: exact counts, the rest written, exit 1", async () => {
    const { copy, before, code, stdout, stderr } = await failingRun("some-fail.jsonl", (r) => (r.user.includes("[[1:grep]]") ? { status: 500 } : {}));
    expect(code).toBe(1);
    const after = readFileSync(copy);
    expect(after.length).toBeGreaterThan(before.length);
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    expect(stderr).toBe(
      `${noFallback(copy, ERROR_500)}error: ${copy}: 1 of 3 batches failed (${ERROR_500}); they stay raw, the rest was written — run again to retry them\n`,
    );
    expect(stdout).toContain(`${copy}: written for stock Pi`);
    expect(stdout).toContain(`${copy}: 2 calls to local/m1`);
  }, 30_000);

  it("with --output: the line says that running again needs --force, since the output exists now", async () => {
    const out = path.join(dir, "some-fail-out.jsonl");
    rmSync(out, { force: true });
    const failing = (r: { user: string }) => (r.user.includes("[[1:grep]]") ? { status: 500 } : {});
    const { copy, before, code, stderr } = await failingRun("some-fail-source.jsonl", failing, ["--output", out]);
    expect(code).toBe(1);
    expect(readFileSync(copy).equals(before)).toBe(true);
    expect(readFileSync(out).subarray(0, before.length).equals(before)).toBe(true);
    expect(stderr.split("\n").at(-2)).toBe(
      `error: ${copy}: 1 of 3 batches failed (${ERROR_500}); they stay raw, the rest was written — run again to retry them, with --force to replace ${out}`,
    );
    // As it says: without --force the output is refused, with it the run is done again.
    expect((await failingRun("some-fail-source.jsonl", () => ({}), ["--output", out])).code).toBe(2);
    const again = await failingRun("some-fail-source.jsonl", () => ({}), ["--output", out, "--force"]);
    expect(again.code).toBe(0);
  }, 40_000);
});

describe("--output when every batch fails", () => {
  it("the output is not created (an existing one is left as it was), the report says so, and a run again is not refused", async () => {
    const out = path.join(dir, "all-fail-out.jsonl");
    rmSync(out, { force: true });
    const failed = await failingRun("all-fail-source.jsonl", () => ({ status: 500 }), ["--output", out]);
    expect(failed.code).toBe(1);
    expect(existsSync(out)).toBe(false);
    expect(readFileSync(failed.copy).equals(failed.before)).toBe(true);
    expect(failed.stderr).toBe(
      `${noFallback(failed.copy, ERROR_500)}error: ${failed.copy}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them\n`,
    );
    expect(failed.stdout).toContain(`${failed.copy}: not written (batches failed) for stock Pi`);
    expect(failed.stdout).toContain("nothing was written: the session file is unchanged");
    expect(failed.stdout).not.toContain("wrote ");
    // An output there already (--force) is left as it was; --json says nothing was written.
    writeFileSync(out, "an earlier output\n");
    const json = await failingRun("all-fail-source.jsonl", () => ({ status: 500 }), ["--output", out, "--force", "--json"]);
    expect(json.code).toBe(1);
    expect(readFileSync(out, "utf8")).toBe("an earlier output\n");
    expect(JSON.parse(json.stdout).sessions[0]).toMatchObject({ written: null, entriesAppended: 0, batches: { captured: 3, failed: 3 } });
    expect(json.stderr.split("\n").at(-2)).toBe(`error: ${json.copy}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them`);
    // The model answers now: the run again writes the output, without --force once none is there.
    rmSync(out);
    const again = await failingRun("all-fail-source.jsonl", () => ({}), ["--output", out]);
    expect(again.code).toBe(0);
    const written = readFileSync(out);
    expect(written.length).toBeGreaterThan(again.before.length);
    expect(written.subarray(0, again.before.length).equals(again.before)).toBe(true);
  }, 60_000);

  it("nothing to append and no batch failed: the output is still written, a copy of the session", async () => {
    // A session condensed once already: a second run has nothing to add.
    const source = path.join(dir, "condensed-source.jsonl");
    const out = path.join(dir, "condensed-out.jsonl");
    rmSync(out, { force: true });
    copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), source);
    server.setPlan(() => ({}));
    expect((await runCli(["run", source, "--model", "local/m1"], ENV())).code).toBe(0);
    const { code, stdout, stderr } = await runCli(["run", source, "--output", out, "--model", "local/m1"], ENV());
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(readFileSync(out).equals(readFileSync(source))).toBe(true);
    expect(stdout).toContain(`wrote ${out}: the bytes of ${source} + 0 entries (+0 bytes); ${source} is untouched`);
  }, 30_000);
});

describe("Ctrl-C over several sessions, one of whose batches all failed", () => {
  /** a.jsonl: every batch answered 500; b.jsonl: answered; c.jsonl: its calls hang, and the first one sends Ctrl-C. */
  async function interruptedRun(extra: string[]) {
    const sessions = mkdtempSync(path.join(dir, "interrupted-"));
    const copy = (from: string, name: string) => {
      copyFileSync(from, path.join(sessions, name));
      return readFileSync(from);
    };
    const before = {
      a: copy(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), "a.jsonl"),
      b: copy(path.resolve(__dirname, "../fixtures/example-session.jsonl"), "b.jsonl"),
      c: copy(path.join(SESSIONS, "kimchi-session.v3.jsonl"), "c.jsonl"),
    };
    let sent = false;
    server.setPlan((r) => {
      if (r.user.includes("checkout") || r.user.includes("discount")) return { status: 500 };
      if (!r.user.includes("kimchi")) return {};
      if (!sent) {
        sent = true;
        setTimeout(() => process.emit("SIGINT"), 50);
      }
      return { delayMs: 30_000 };
    });
    const run = await runCli(["run", sessions, "--model", "local/m1", "--jobs", "1", ...extra], { ...ENV(), ANTHROPIC_API_KEY: undefined });
    const file = (name: string) => readFileSync(path.join(sessions, name));
    expect(sent).toBe(true);
    expect(file("a.jsonl").equals(before.a)).toBe(true);
    expect(file("b.jsonl").length).toBeGreaterThan(before.b.length);
    expect(file("c.jsonl").equals(before.c)).toBe(true);
    return { ...run, a: path.join(sessions, "a.jsonl"), c: path.join(sessions, "c.jsonl") };
  }

  it.each([[[]], [["--ndjson"]]])(
    "counts it as failed, not done, and says how many of its batches failed; exit 130 (%j)",
    async (extra: string[]) => {
      const { code, stderr, a } = await interruptedRun(extra);
      expect(code).toBe(130);
      expect(stderr.split("\n").slice(-3)).toEqual([
        `error: ${a}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them`,
        "error: interrupted: 1 of 3 sessions done, 1 failed, 1 untouched (nothing was written to them); run the same command again to continue",
        "",
      ]);
    },
    60_000,
  );

  it("uninterrupted, the closing line counts it among the failed sessions too (exit 1)", async () => {
    const sessions = mkdtempSync(path.join(dir, "closing-"));
    copyFileSync(path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl"), path.join(sessions, "a.jsonl"));
    copyFileSync(path.resolve(__dirname, "../fixtures/example-session.jsonl"), path.join(sessions, "b.jsonl"));
    server.setPlan((r) => (r.user.includes("checkout") || r.user.includes("discount") ? { status: 500 } : {}));
    const { code, stderr } = await runCli(["run", sessions, "--model", "local/m1", "--jobs", "1"], { ...ENV(), ANTHROPIC_API_KEY: undefined });
    expect(code).toBe(1);
    expect(stderr.split("\n").slice(-3)).toEqual([
      `error: ${path.join(sessions, "a.jsonl")}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them`,
      "error: 1 of 2 sessions failed (listed above); the others were processed",
      "",
    ]);
  }, 60_000);

  it("--json: the document's interrupted counts it as failed, and stderr has its line", async () => {
    const { code, stdout, stderr, a, c } = await interruptedRun(["--json"]);
    expect(code).toBe(130);
    const doc = JSON.parse(stdout);
    expect(doc.interrupted).toEqual({ done: 1, failed: 1, untouched: [c] });
    expect(doc.sessions.map((s: { batches: { failed: number } }) => s.batches.failed)).toEqual([3, 0]);
    expect(stderr.split("\n").at(-2)).toBe(`error: ${a}: 3 of 3 batches failed (${ERROR_500}); nothing was written — run again to retry them`);
  }, 60_000);
});

describe("the progress line", () => {
  it("shows batches done / total, failures, tokens and cost so far", () => {
    expect(progressLine("local/m1", { done: 3, total: 96, failed: 0, usage: { input: 800, output: 150, cost: 0 } })).toBe(
      "summarizing with local/m1: 3/96 batches · 950 tokens",
    );
    expect(progressLine("anthropic/claude-haiku-4-5", { done: 40, total: 96, failed: 2, usage: { input: 41_000, output: 5_321, cost: 0.01234 } })).toBe(
      "summarizing with anthropic/claude-haiku-4-5: 40/96 batches · 2 failed · 46.3k tokens · $0.0123",
    );
  });
});
