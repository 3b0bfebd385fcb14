import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { fixture, runCli, runCliWith, tempDir } from "./cli-capture.js";
import { fixedLengthTempDir } from "./helpers.js";
import { copyTo } from "./render-support.js";

// metrics-one-open-chain.jsonl: frontier gap 35, chain share 100%, open thinking 29,
// context after `run` 98 tokens, no structural diagnostics (see metrics.test.ts).
const OPEN = fixture("metrics-one-open-chain.jsonl");
// diagnostics-shapes.jsonl: 5 structural faults.
const SHAPES = fixture("diagnostics-shapes.jsonl");

// [flag, metric, value, the limit just below it, the limit equal to it, as printed]
const gates: [flag: string, metric: string, value: string, below: string, equal: string][] = [
  ["--max-frontier-gap", "frontierGapTokens", "35", "34", "35"],
  ["--max-chain-share", "largestChainSharePct", "100%", "99%", "100%"],
  ["--max-open-thinking", "openCycleThinkingTokens", "29", "28", "29"],
  ["--max-context", "context.piOnly.after.tokens", "98 (what stock Pi sends after `condense run`)", "97", "98"],
];

// chain-partly-summarized.jsonl: after `run`, stock Pi sends 123 tokens (at that path), Pi with the extension 102.
// Stock Pi's stubs name the session's path (`condense query tN --session PATH`), so the file is
// copied to a path of the same length wherever the checkout and $TMPDIR are: /tmp/condense-gates-XXXXXX/.
const copy = fixedLengthTempDir("gates");
afterAll(copy.cleanup);
const PARTLY = copyTo(copy.dir, fixture("chain-partly-summarized.jsonl"));

describe("--max-context gates on what the user's Pi sends, the figure the table prints", () => {
  it("stock Pi (no Pi settings): the table's 403 → 123 is tested, not the extension's 102", async () => {
    const table = await runCli("metrics", PARTLY);
    expect(table.stdout).toMatch(/403 → 123 \(-69%\)/);
    const crossed = await runCli("metrics", PARTLY, "--max-context", "110");
    expect(crossed.code).toBe(3);
    expect(crossed.stderr).toContain(
      `error: limit crossed: ${PARTLY}: context.piOnly.after.tokens = 123 (what stock Pi sends after \`condense run\`) exceeds --max-context 110`,
    );
    expect((await runCli("metrics", PARTLY, "--max-context", "123")).code).toBe(0);
    const json = JSON.parse((await runCli("metrics", PARTLY, "--json", "--max-context", "122")).stdout);
    expect(json.gates.crossed).toEqual([
      { session: PARTLY, metric: "context.piOnly.after.tokens", flag: "--max-context", value: 123, limit: 122, pi: "stock Pi" },
    ]);
  });

  it("Pi with the extension installed and switched on: the extension's 102 is tested", async () => {
    const { dir, cleanup } = tempDir("gates-pi");
    onTestFinished(cleanup);
    writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ packages: ["npm:pi-condense"], contextPrune: { enabled: true } }));
    const table = await runCliWith({ PI_CODING_AGENT_DIR: dir }, "metrics", PARTLY);
    expect(table.stdout).toMatch(/403 → 102 \(-75%\)/);
    const crossed = await runCliWith({ PI_CODING_AGENT_DIR: dir }, "metrics", PARTLY, "--max-context", "101");
    expect(crossed.code).toBe(3);
    expect(crossed.stderr).toContain(
      `error: limit crossed: ${PARTLY}: context.after.tokens = 102 (what Pi with pi-condense sends after \`condense run\`) exceeds --max-context 101`,
    );
    expect((await runCliWith({ PI_CODING_AGENT_DIR: dir }, "metrics", PARTLY, "--max-context", "110")).code).toBe(0);
  });
});

describe("CI gates: exit 3 when a limit is crossed, 0 when not", () => {
  it.each(gates)("%s crossed (limit = value − 1)", async (flag, metric, value, below) => {
    const r = await runCli("metrics", OPEN, flag, below);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`error: limit crossed: ${OPEN}: ${metric} = ${value} exceeds ${flag} ${below}`);
  });

  it.each(gates)("%s not crossed (limit = value)", async (flag, _metric, _value, _below, equal) => {
    const r = await runCli("metrics", OPEN, flag, equal);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain("limit crossed");
  });

  it.each([
    ["--max-context", "0.09k", 3],
    ["--max-context", "0.1k", 0],
    ["--max-context", "97", 3],
    ["--max-frontier-gap", "1k", 0],
    ["--max-chain-share", "0.99", 3],
    ["--max-chain-share", "1", 0],
  ])("%s %s: token counts take k/M, shares a fraction or a percentage (exit %i)", async (flag, value, code) => {
    expect((await runCli("metrics", OPEN, flag, value)).code).toBe(code);
  });

  it("--fail-on-diagnostics crossed by a session with faults, naming them", async () => {
    const r = await runCli("metrics", SHAPES, "--fail-on-diagnostics");
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `error: limit crossed: ${SHAPES}: diagnosticFaults = 5 (orphanResults 1, unansweredCalls 1, duplicateIdsInMessage 1, reusedIds 1, splitCallResult 1) exceeds --fail-on-diagnostics 0`,
    );
  });

  it("--fail-on-diagnostics not crossed by a clean session (images alone never fail it)", async () => {
    expect((await runCli("metrics", OPEN, "--fail-on-diagnostics")).code).toBe(0);
  });

  it("without limits, faults are reported but the exit code is 0", async () => {
    expect((await runCli("metrics", SHAPES)).code).toBe(0);
  });

  it("--json lists every crossing with session, metric, flag, value and limit", async () => {
    const r = await runCli(
      "metrics",
      OPEN,
      SHAPES,
      "--json",
      "--jobs",
      "1",
      "--max-chain-share",
      "0.8",
      "--max-open-thinking",
      "0.1k",
      "--fail-on-diagnostics",
    );
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout);
    // The chain share limit is kept as a percentage, like the metric it is compared with.
    expect(doc.gates.limits).toEqual({ maxChainShare: 80, maxOpenThinking: 100, failOnDiagnostics: true });
    expect(doc.gates.crossed).toEqual([
      { session: OPEN, metric: "largestChainSharePct", flag: "--max-chain-share", value: 100, limit: 80 },
      { session: SHAPES, metric: "largestChainSharePct", flag: "--max-chain-share", value: 100, limit: 80 },
      {
        session: SHAPES,
        metric: "diagnosticFaults",
        flag: "--fail-on-diagnostics",
        value: 5,
        limit: 0,
        detail: "orphanResults 1, unansweredCalls 1, duplicateIdsInMessage 1, reusedIds 1, splitCallResult 1",
      },
    ]);
  });
});

describe("exit code precedence and bad limits", () => {
  const tmp = tempDir("gates");
  afterAll(tmp.cleanup);

  it("a failed file (exit 1) wins over a crossed limit (3); the other sessions are still reported", async () => {
    const empty = path.join(tmp.dir, "empty.jsonl");
    writeFileSync(empty, "");
    const r = await runCli("metrics", OPEN, empty, "--max-chain-share", "50%", "--json", "--jobs", "1");
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions).toHaveLength(1);
    expect(doc.failures).toEqual([{ session: empty, error: expect.stringContaining(empty) }]);
    expect(doc.gates.crossed).toHaveLength(1);
  });

  it.each([
    ["--max-frontier-gap", "-1", '--max-frontier-gap: expected a token count such as 120000, 120k or 1.2M, got "-1"'],
    ["--max-chain-share", "101%", '--max-chain-share: expected a fraction from 0 to 1 (0.8) or a percentage (80%), got "101%"'],
    // The old reading (a bare percentage) is refused, not guessed: 0.8 now means 80%.
    ["--max-chain-share", "80", "--max-chain-share: a bare number is a fraction from 0 to 1; for 80 percent write 80% (or 0.8)"],
    ["--max-context", "lots", '--max-context: expected a token count such as 120000, 120k or 1.2M, got "lots"'],
    ["--max-context", "12x", '--max-context: expected a token count such as 120000, 120k or 1.2M, got "12x"'],
    // A fraction of a token is refused, not rounded (0.5 was read as 1: a gate every session crosses).
    ["--max-context", "0.5", '--max-context: a token count is a whole number of tokens such as 120000, 120k or 1.2M, got "0.5" (a share is not a token count)'],
    ["--max-context", "1.5", '--max-context: a token count is a whole number of tokens such as 120000, 120k or 1.2M, got "1.5"'],
    ["--max-frontier-gap", "1.2345k", '--max-frontier-gap: a token count is a whole number of tokens such as 120000, 120k or 1.2M, got "1.2345k"'],
  ])("%s %s is a usage error (exit 2)", async (flag, value, message) => {
    const r = await runCli("metrics", OPEN, flag, value);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
  });
});
