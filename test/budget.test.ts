import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { reportedRequests } from "../src/context/usage.js";
import { protectionTest } from "../src/prune/protect.js";
import { budgetChart } from "../src/report/budget-chart.js";
import {
  budgetLevel,
  loadModelRegistry,
  MAX_BUDGET_WINDOW,
  registryWindow,
  replayBudget,
  usageFraction,
  type BudgetOptions,
  type BudgetRow,
} from "../src/report/budget.js";
import { lineOf } from "../src/report/session-metrics.js";
import { openSession } from "../src/session/open.js";
import { runCliWith, SHARED_SESSIONS, fixture, runCli } from "./cli-capture.js";

beforeAll(loadModelRegistry);

async function replay(name: string, options: Partial<BudgetOptions> = {}) {
  const session = await openSession(name.includes("/") ? name : fixture(name), "read");
  return replayBudget(session.branch, {
    threshold: 0.735,
    delta: 0.04,
    isProtected: protectionTest(defaultConfig()),
    lineOf: (e) => lineOf(session, e),
    ...options,
  });
}

const pick = (rows: BudgetRow[], ...keys: (keyof BudgetRow)[]) => rows.map((r) => Object.fromEntries(keys.map((k) => [k, r[k]])));

describe("budget math (docs/design.md)", () => {
  it("the level never divides: min(300000, threshold × window)", () => {
    expect(MAX_BUDGET_WINDOW).toBe(300_000);
    expect(budgetLevel(0.4, 1_000_000)).toBe(300_000);
    expect(budgetLevel(0.1, 1_000_000)).toBe(100_000);
    expect(budgetLevel(0.735, 200_000)).toBe(147_000);
    expect(budgetLevel(0.9, 256_000)).toBe(230_400);
    expect(usageFraction(600_000, 1_000_000)).toBe(2);
    expect(usageFraction(8_000, 200_000)).toBe(0.04);
  });

  it("reads windows from pi-ai's registry", () => {
    expect(registryWindow("anthropic", "claude-sonnet-4-5")).toBe(200_000);
    expect(registryWindow("zai", "glm-5.2")).toBe(1_000_000);
    expect(registryWindow("kimchi-dev", "kimi-k2.5")).toBeUndefined();
  });
});

describe("replayBudget on small fixtures", () => {
  it("the 300k cap on a 1M-window model: 0.4 fires at 300,000, not at 400,000 nor at 120,000", async () => {
    const r = await replay("budget-1m-window-cap.jsonl", { threshold: 0.4, delta: null });
    expect(pick(r.rows, "turn", "tokens", "window", "level", "budgetFires", "trigger")).toEqual([
      { turn: 1, tokens: 120_000, window: 1_000_000, level: 300_000, budgetFires: false, trigger: "none" },
      { turn: 2, tokens: 299_999, window: 1_000_000, level: 300_000, budgetFires: false, trigger: "none" },
      { turn: 3, tokens: 300_000, window: 1_000_000, level: 300_000, budgetFires: true, trigger: "budget" },
      { turn: 4, tokens: 400_000, window: 1_000_000, level: 300_000, budgetFires: true, trigger: "budget" },
    ]);
    // The fraction's denominator carries the same cap: 400,000 / 300,000, unclamped.
    expect(r.rows[3].fraction).toBe(400_000 / 300_000);
    expect(r.summary).toEqual({
      toolTurns: 4,
      evaluatedTurns: 4,
      flushes: 2,
      budgetFlushes: 2,
      deltaFlushes: 0,
      firstFlush: { turn: 3, turnIndex: 2, entryId: "b0000006", line: 7, trigger: "budget" },
      peakTokens: 400_000,
      peakTurn: 4,
      peakEntryId: "b0000008",
      peakLine: 9,
      unknownModels: [],
    });
  });

  it("0.735 on a 200k window fires at 147,000; the delta needs +8,000 tokens", async () => {
    const r = await replay("budget-200k-threshold-delta.jsonl");
    expect(pick(r.rows, "turn", "tokens", "level", "budgetFires", "deltaFires", "trigger")).toEqual([
      { turn: 1, tokens: 100_000, level: 147_000, budgetFires: false, deltaFires: false, trigger: "none" },
      // +7,999 tokens = 0.039995 of 200,000: below the delta.
      { turn: 2, tokens: 107_999, level: 147_000, budgetFires: false, deltaFires: false, trigger: "none" },
      // +8,000 tokens = 0.04: fires.
      { turn: 3, tokens: 115_999, level: 147_000, budgetFires: false, deltaFires: true, trigger: "delta" },
      { turn: 4, tokens: 146_999, level: 147_000, budgetFires: false, deltaFires: true, trigger: "delta" },
      { turn: 5, tokens: 147_000, level: 147_000, budgetFires: true, deltaFires: false, trigger: "budget" },
    ]);
    expect(r.rows[1].delta).toBeCloseTo(0.039995, 12);
    expect(r.rows[2].delta).toBeCloseTo(0.04, 12);
    expect(r.summary.firstFlush).toEqual({ turn: 3, turnIndex: 2, entryId: "b0000006", line: 7, trigger: "delta" });
    expect(r.summary.flushes).toBe(3);
    expect(r.summary.peakTokens).toBe(147_000);
  });

  it("the peak counts every reported request: a final reply of 148,000 after the last tool turn's 147,000", async () => {
    // budget-peak-on-final-reply.jsonl: budget-200k-threshold-delta.jsonl and a text-only reply (line 13).
    const r = await replay("budget-peak-on-final-reply.jsonl");
    expect(r.rows.map((row) => row.tokens)).toEqual([100_000, 107_999, 115_999, 146_999, 147_000]);
    expect(r.summary).toMatchObject({ peakTokens: 148_000, peakTurn: null, peakEntryId: "b000000c", peakLine: 13 });
    // The last reported request, read the same way, is that reply: the peak is never below it.
    const session = await openSession(fixture("budget-peak-on-final-reply.jsonl"), "read");
    expect(reportedRequests(session.branch).at(-1)).toMatchObject({ tokens: 148_000, entry: { id: "b000000c" } });
  });

  it("the first turn never fires the delta, however small the delta", async () => {
    const r = await replay("budget-200k-threshold-delta.jsonl", { threshold: null, delta: 0.000001 });
    expect(r.rows[0]).toMatchObject({ fraction: 0.5, delta: null, deltaFires: false, trigger: "none", level: null });
    expect(r.rows[0].note).toBe("first turn with a fraction: the delta cannot fire");
    expect(r.rows.slice(1).every((row) => row.trigger === "delta")).toBe(true);
  });

  it("null usage after a compaction: no trigger, and the previous fraction is kept", async () => {
    const r = await replay("budget-null-usage-after-compaction.jsonl");
    expect(pick(r.rows, "turn", "tokens", "tokensFrom", "fraction", "trigger")).toEqual([
      { turn: 1, tokens: 120_000, tokensFrom: "turn", fraction: 0.6, trigger: "none" },
      // After the compaction this turn reported no usage: tokens unknown.
      { turn: 2, tokens: null, tokensFrom: null, fraction: null, trigger: "none" },
      // Compared with 0.6 (kept), not with 0: a drop, no spurious spike.
      { turn: 3, tokens: 30_000, tokensFrom: "turn", fraction: 0.15, trigger: "none" },
      { turn: 4, tokens: 38_000, tokensFrom: "turn", fraction: 0.19, trigger: "delta" },
      // No usable usage and no compaction since: Pi keeps the last reported figure.
      { turn: 5, tokens: 38_000, tokensFrom: "earlier", fraction: 0.19, trigger: "none" },
    ]);
    expect(r.rows[1].note).toBe("no usage since the last compaction");
    expect(r.rows[2].delta).toBeCloseTo(-0.45, 12);
    expect(r.rows[3].delta).toBeCloseTo(0.04, 12);
    expect(r.summary.peakTokens).toBe(120_000);
  });

  it("a session that is one open chain: every tool turn is evaluated", async () => {
    const r = await replay("metrics-one-open-chain.jsonl");
    expect(pick(r.rows, "turn", "turnIndex", "tokens", "trigger")).toEqual([
      { turn: 1, turnIndex: 0, tokens: 12_000, trigger: "none" },
      // 12,600 − 12,000 = 600 tokens = 0.003 of 200k; 13,100 − 12,600 = 0.0025.
      { turn: 2, turnIndex: 1, tokens: 12_600, trigger: "none" },
      { turn: 3, turnIndex: 2, tokens: 13_100, trigger: "none" },
    ]);
  });

  it("turns that queue nothing (protected calls) are not evaluated", async () => {
    const r = await replay("budget-200k-threshold-delta.jsonl", { isProtected: (name) => name === "read" });
    expect(r.rows.every((row) => !row.evaluated && row.trigger === "none")).toBe(true);
    expect(r.summary).toMatchObject({ toolTurns: 5, evaluatedTurns: 0, flushes: 0, firstFlush: null });
  });

  it("an unknown model has no window and is named; --context-window overrides the registry", async () => {
    const file = path.join(SHARED_SESSIONS, "kimchi-session.v3.jsonl");
    const r = await replay(file);
    expect(r.summary.unknownModels).toEqual(["kimchi-dev/kimi-k2.5"]);
    expect(r.summary.flushes).toBe(0);
    expect(r.rows.every((row) => row.window === null && row.windowFrom === "unknown" && row.note === "unknown model kimchi-dev/kimi-k2.5")).toBe(true);
    const o = await replay(file, { contextWindow: 100_000 });
    expect(o.summary.unknownModels).toEqual([]);
    expect(o.rows.every((row) => row.window === 100_000 && row.windowFrom === "override" && row.level === 73_500)).toBe(true);
  });
});

describe("budget chart", () => {
  const row = (turn: number, tokens: number | null, trigger: BudgetRow["trigger"]): BudgetRow => ({
    turn,
    turnIndex: turn - 1,
    entryId: "x",
    line: null,
    model: null,
    tokens,
    tokensFrom: tokens === null ? null : "turn",
    window: 200_000,
    windowFrom: "registry",
    level: 100_000,
    fraction: null,
    delta: null,
    budgetFires: trigger === "budget",
    deltaFires: trigger === "delta",
    trigger,
    evaluated: true,
  });

  it("draws bars, the level line and the trigger marks", () => {
    const lines = budgetChart([row(1, 50_000, "none"), row(2, null, "none"), row(3, 100_000, "delta"), row(4, 200_000, "budget")], { height: 4 });
    expect(lines).toEqual([
      "200k ┤   █",
      // The 100k row spans [100k, 150k): a bar of exactly 100k ends just below the level line.
      "100k ┤───█",
      "     ┤  ██",
      "   0 ┤█ ██",
      "     └────",
      "        DB",
    ]);
  });

  it("maxWidth takes bars away until every line, labels included, fits", () => {
    const rows = Array.from({ length: 80 }, (_, i) => row(i + 1, 1_000 * (i + 1) ** 2, "none"));
    const wide = budgetChart(rows, { width: 80 });
    expect(Math.max(...wide.map((l) => l.length))).toBe(86); // "6.4M ┤" + 80 bars
    for (const maxWidth of [86, 80, 60, 33]) {
      const lines = budgetChart(rows, { width: 80, maxWidth });
      const longest = Math.max(...lines.map((l) => l.length));
      expect(longest).toBeLessThanOrEqual(maxWidth);
      // Bucketing takes whole turns per column: 80 turns in 40 columns of 2, 27 of 3.
      expect(longest).toBeGreaterThan(maxWidth / 2);
    }
    expect(budgetChart(rows, { width: 80, maxWidth: 86 })).toEqual(wide);
  });

  it("buckets turns into at most `width` columns (maximum per bucket)", () => {
    const rows = Array.from({ length: 10 }, (_, i) => row(i + 1, (i + 1) * 10_000, "none"));
    const lines = budgetChart(rows, { width: 5, height: 2 });
    expect(lines[lines.length - 1]).toBe("     └─────");
    expect(budgetChart([row(1, null, "none")])).toEqual([]);
  });
});

describe("condense budget", () => {
  it("--json gives the rows and the summary", async () => {
    const r = await runCli("budget", fixture("budget-1m-window-cap.jsonl"), "--threshold", "0.4", "--delta", "off", "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.schema).toBe("condense.budget/1");
    expect(doc.threshold).toBe(0.4);
    expect(doc.delta).toBeNull();
    expect(doc.rows.map((x: BudgetRow) => x.trigger)).toEqual(["none", "none", "budget", "budget"]);
    expect(doc.summary.firstFlush.turn).toBe(3);
  });

  it("defaults to the configuration (0.735 / 0.04) and honors --set", async () => {
    const d = JSON.parse((await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--json")).stdout);
    expect([d.threshold, d.delta]).toEqual([0.735, 0.04]);
    const s = JSON.parse((await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--set", "autoBudgetThreshold=0.5", "--json")).stdout);
    expect(s.threshold).toBe(0.5);
    expect(s.rows[0].level).toBe(100_000);
  });

  it("a narrow terminal cuts the label but prints the session's path whole (budget and render --stats)", async () => {
    const file = fixture("budget-200k-threshold-delta.jsonl");
    for (const args of [
      ["budget", file],
      ["render", file, "--stats"],
    ]) {
      const r = await runCliWith({ COLUMNS: "40" }, ...args);
      expect(r.code).toBe(0);
      const lines = r.stdout.split("\n");
      expect(file.length).toBeGreaterThan(40);
      expect(lines).toContain(file);
      expect(lines[lines.indexOf(file) - 1].length).toBeLessThanOrEqual(40);
    }
  });

  it("prints who, the context before → after, a table, a summary and a chart", async () => {
    const r = await runCliWith({ COLUMNS: "200" }, "budget", fixture("budget-200k-threshold-delta.jsonl"));
    expect(r.code).toBe(0);
    const doc = JSON.parse((await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--json")).stdout);
    // No Pi settings here: the context stock Pi sends (the extension is not installed).
    expect(doc.target.used).toBe("pi");
    expect(r.stdout.split("\n").slice(0, 4)).toEqual([
      "budget-2 2026-01-01 Refactor the parser.",
      fixture("budget-200k-threshold-delta.jsonl"),
      `context Pi sends (stock Pi): ${doc.context.piOnly.before.tokens.toLocaleString("en-US")} ~tokens now → ${doc.context.piOnly.after.tokens.toLocaleString("en-US")} after \`condense run\` (0%)`,
      "threshold 0.735, delta 0.04 (of the window, counted up to 300,000 tokens)",
    ]);
    expect(r.stdout).toContain("Pi would auto-compact (reserveTokens 16,384): never");
    expect(r.stdout).toContain("   3  b0000006     7  anthropic/claude-sonnet-4-5  115,999  200,000  147,000     58.0%   +4.0  delta");
    expect(r.stdout).toContain(
      "3 flushes (1 budget, 2 delta) over 5 evaluated of 5 tool-using turns; first flush: turn 3 (delta, entry b0000006, line 7); peak tokens: 147,000 at turn 5",
    );
    expect(r.stdout).toContain("147k ┤───██");
  });

  it("names an unknown model on stderr", async () => {
    const r = await runCli("budget", path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), "--no-chart");
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("model kimchi-dev/kimi-k2.5 is not in pi-ai's registry; its turns have no window (pass --context-window N)");
    expect(r.stdout).toContain("unknown models (no window): kimchi-dev/kimi-k2.5");
    // Evaluated, but no trigger can fire without a window: the summary says so.
    expect(r.stdout).toContain(
      "0 flushes (0 budget, 0 delta) over 35 evaluated of 35 tool-using turns (35 with the window unknown: no trigger can fire there); first flush: none;",
    );
    // Without a window nothing says Pi would never compact: unknown, as compact --if-over says.
    expect(r.stdout).toContain("Pi would auto-compact (reserveTokens 16,384): ? — window unknown (kimchi-dev/kimi-k2.5; pass --context-window N)\n");
    expect(r.stdout).not.toContain("never");
  });

  it("--json carries the warnings it gives on stderr, as run --json does (--quiet too)", async () => {
    const file = fixture("bad-glued-objects.jsonl");
    const glued =
      `${file}:3 (byte 311): two JSON objects glued on one line; the line is skipped, as Pi skips it: ` +
      '"{\\"type\\":\\"message\\",\\"id\\":\\"aa000002\\",\\"parentId\\":\\"aa000001\\",\\"tim…"';
    const r = await runCli("budget", file, "--json");
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`warning: ${glued}\n`);
    expect(JSON.parse(r.stdout).warnings).toEqual([glued]);
    const quiet = await runCli("budget", file, "--json", "--quiet");
    expect([quiet.stderr, JSON.parse(quiet.stdout).warnings]).toEqual(["", [glued]]);
    // An unknown model: the stderr line, word for word, and none on a clean session.
    const kimchi = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
    expect(JSON.parse((await runCli("budget", kimchi, "--json")).stdout).warnings).toEqual([
      `${kimchi}: model kimchi-dev/kimi-k2.5 is not in pi-ai's registry; its turns have no window (pass --context-window N)`,
    ]);
    expect(JSON.parse((await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--json")).stdout).warnings).toEqual([]);
  });

  it("rejects bad values with exit 2", async () => {
    const t = await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--threshold", "1.5");
    expect(t.code).toBe(2);
    expect(t.stderr).toContain("--threshold: a bare number is a fraction above 0 and at most 1; for 1.5 percent write 1.5% (or 0.015)");
    const z = await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--delta", "0%");
    expect(z.code).toBe(2);
    expect(z.stderr).toContain('--delta: expected a fraction above 0 and at most 1 (0.8) or a percentage (80%), got "0%"');
    const w = await runCli("budget", fixture("budget-200k-threshold-delta.jsonl"), "--context-window", "0");
    expect(w.code).toBe(2);
    expect(w.stderr).toContain('--context-window: expected a token count of at least 1 such as 120000, 120k or 1.2M, got "0"');
  });

  it("takes shares as fractions or percentages and windows as 200k", async () => {
    const a = JSON.parse((await runCli("budget", fixture("budget-1m-window-cap.jsonl"), "--threshold", "40%", "--json")).stdout);
    const b = JSON.parse((await runCli("budget", fixture("budget-1m-window-cap.jsonl"), "--threshold", "0.4", "--json")).stdout);
    expect(a.threshold).toBe(0.4);
    expect(a.rows).toEqual(b.rows);
    const w = JSON.parse((await runCli("budget", fixture("budget-1m-window-cap.jsonl"), "--context-window", "0.2M", "--json")).stdout);
    expect(w.contextWindow).toBe(200_000);
  });
});

describe("Pi's auto-compaction at a request without tool calls: one place for budget and report", () => {
  // Pi compacts before the request of entry 25123f9e (line 446), an aborted reply with no tool
  // call: the place is marked at tool-using turn 174, the first turn after it.
  const file = path.join(SHARED_SESSIONS, "pimono-custom-tool-session.migrated-v3.jsonl");
  const place = {
    entryId: "25123f9e",
    tokens: 183_630,
    reason: "threshold",
    check: "before-request",
    contextWindow: 200_000,
    level: 183_616,
    turn: 174,
    turnIs: "next",
    line: 446,
  };

  it("budget names the place, marks turn 174 in the table and draws a C under the chart", async () => {
    const json = JSON.parse((await runCli("budget", file, "--json")).stdout);
    expect(json.summary.piCompactions).toEqual([place]);
    expect(json.rows.filter((r: { piCompaction: string | null }) => r.piCompaction !== null).map((r: { turn: number }) => r.turn)).toEqual([174]);
    const text = (await runCliWith({ COLUMNS: "200" }, "budget", file)).stdout;
    expect(text).toContain(
      "Pi would auto-compact (reserveTokens 16,384): before the request of entry 25123f9e, line 446, a request without tool calls; " +
        "marked at turn 174, the first it shrinks (~183,630 > 183,616 = 200,000 − 16,384)",
    );
    expect(text.trimEnd().split("\n").at(-1)?.trim()).toBe("C");
  });

  it("the turn table says Pi compacts at turn 174: `compacts` in the narrow layout, `compacts (threshold)` in the wide one", async () => {
    const rowOf = (text: string) => text.split("\n").find((l) => /^ 174 /.test(l));
    const narrow = (await runCliWith({ COLUMNS: "80" }, "budget", file, "--no-chart")).stdout;
    expect(narrow).toContain("\nturn   tokens   window  fraction  Δ pts  fires   Pi ~tokens  Pi\n");
    expect(rowOf(narrow)).toBe(" 174  183,699  200,000     91.8%   +0.6  budget     183,631  compacts");
    // 60 columns: the window goes, and every line of the table fits.
    const sixty = (await runCliWith({ COLUMNS: "60" }, "budget", file, "--no-chart")).stdout;
    expect(sixty).toContain("\nturn   tokens  fraction  Δ pts  fires   Pi ~tokens  Pi\n");
    expect(rowOf(sixty)).toBe(" 174  183,699     91.8%   +0.6  budget     183,631  compacts");
    const lines = sixty.split("\n");
    const start = lines.findIndex((l) => l.startsWith("turn "));
    const table = lines.slice(start, lines.indexOf("", start));
    expect(table.length).toBeGreaterThan(100);
    expect(Math.max(...table.map((l) => l.length))).toBeLessThanOrEqual(60);
    const wide = (await runCliWith({ COLUMNS: "200" }, "budget", file, "--no-chart")).stdout;
    expect(rowOf(wide)).toBe(
      " 174  87db6c2e   448  anthropic/claude-opus-4-5  183,699  200,000  147,000     91.8%   +0.6  budget     183,631  compacts (threshold)",
    );
  });

  it("on a 60-column terminal where the compact table without its window is still too wide, Δ pts goes too", async () => {
    const text = (await runCliWith({ COLUMNS: "60" }, "budget", path.join(SHARED_SESSIONS, "pimono-compact-hooks.v1.jsonl"), "--no-chart")).stdout;
    const lines = text.split("\n");
    const start = lines.findIndex((l) => l.startsWith("turn "));
    const table = lines.slice(start, lines.indexOf("", start));
    expect(table[0]).toBe("turn    tokens  fraction  fires   Pi ~tokens  Pi");
    expect(table).toContain(" 296   183,942     92.0%  budget     183,831  compacts");
    expect(Math.max(...table.map((l) => l.length))).toBeLessThanOrEqual(60);
  });

  it("report says the same turn (not `turn —`), in its table and its JSON", async () => {
    const json = JSON.parse((await runCli("report", file, "--json")).stdout);
    expect(json.sessions[0].budget.summary.piCompactions).toEqual([place]);
    const row = (await runCliWith({ COLUMNS: "250" }, "report", file)).stdout.split("\n").find((l) => l.includes("5fd1e58c"));
    expect(row).toMatch(/│ turn 174 +│ \$19\.87 │$/);
  });
});

describe("Pi's check after the final reply (_checkCompaction case 3): a session whose last reply is over the level", () => {
  // budget-final-reply-over-level.jsonl: three tool turns (100,000 / 150,000 / 160,000 reported),
  // then a text reply reporting 190,000 > 183,616 = 200,000 − 16,384 (line 9). No request follows
  // it, so only the check at the end of the run (and before the next prompt) can fire.
  const file = fixture("budget-final-reply-over-level.jsonl");
  const place = {
    entryId: "e0000008",
    tokens: 190_000,
    reason: "threshold",
    check: "after-reply",
    contextWindow: 200_000,
    level: 183_616,
    turn: null,
    turnIs: "none",
    line: 9,
  };

  it("budget, report and compact --if-over agree that Pi compacts: after the final reply, at line 9", async () => {
    const json = JSON.parse((await runCli("budget", file, "--json")).stdout);
    expect(json.summary.piCompactions).toEqual([place]);
    expect((await runCli("budget", file, "--no-chart")).stdout).toContain(
      "Pi would auto-compact (reserveTokens 16,384): after the final reply, before the next prompt (entry e0000008, line 9) (~190,000 > 183,616 = 200,000 − 16,384)",
    );
    const report = JSON.parse((await runCli("report", file, "--json")).stdout);
    expect(report.sessions[0].budget.summary.piCompactions).toEqual([place]);
    expect((await runCliWith({ COLUMNS: "200" }, "report", file)).stdout).toMatch(/│ line 9 +│ \$0\.00 │\n/);
    const compact = JSON.parse((await runCli("compact", file, "--if-over", "--dry-run", "--json")).stdout);
    expect(compact.sessions[0].trigger).toEqual({ piWouldCompact: true, reason: "threshold", level: 183_616, contextTokens: 190_000 });
  });

  it("a level above the reply: never", async () => {
    const r = await runCli("budget", file, "--no-chart", "--context-window", "210k");
    expect(r.stdout).toContain("Pi would auto-compact (reserveTokens 16,384): never");
  });
});

describe("a place is never marked past a compaction Pi recorded after it", () => {
  // budget-points-around-a-compaction.jsonl: a tool turn, text replies of 190,000 and 190,100
  // (Pi compacts before the second, line 7), a recorded compaction (line 8), a reply of 190,500,
  // then tool turns 2 and 3. The first place has no tool-using turn before the compaction: it is
  // told by its line, not marked at turn 2 (where the second place is).
  it("budget: line 7 (no turn), then turn 2", async () => {
    const json = JSON.parse((await runCli("budget", fixture("budget-points-around-a-compaction.jsonl"), "--json")).stdout);
    expect(json.summary.piCompactions.map((p: { turn: number | null; turnIs: string; line: number }) => [p.turn, p.turnIs, p.line])).toEqual([
      [null, "none", 7],
      [2, "request", 12],
    ]);
    const report = (await runCliWith({ COLUMNS: "200" }, "report", fixture("budget-points-around-a-compaction.jsonl"))).stdout;
    expect(report).toMatch(/│ line 7, turn 2 +│ \$0\.00 │\n/);
  });
});
