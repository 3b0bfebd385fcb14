/**
 * After `condense compact`:
 * - the overflow rescue (fixtures/compact-overflow-rescue.jsonl, derived from a shared session by
 *   test/derive-overflow-fixture.mjs): a session whose last request overflowed the window resumes
 *   within it, with reserveTokens to spare, by Pi's own estimate — and Pi would not compact again;
 * - render, metrics and query keep working on a compacted (and pruned) copy of a shared session;
 * - a run after compact appends nothing: chains the compaction took out of the context are no
 *   `unresolved-range` faults (metrics counts none, --fail-on-diagnostics passes);
 * - budget shows where Pi itself would have auto-compacted, checked against the compaction Pi
 *   really recorded in a shared session; Pi's per-request context estimates equal Pi's own.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contextBeforeRequests } from "../src/compact/trigger.js";
import { loadSession } from "../src/session/session.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, importPiCompaction, importPiMessages, importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";
import { piTransform } from "./render-support.js";

const NOW = "2026-02-01T00:00:00.000Z";
let tmp: ReturnType<typeof makeTempDir>;
let Pi: any;
let PiCompaction: any;
let PiMessages: any;
let piDir: string;
beforeAll(async () => {
  tmp = makeTempDir("compact-after");
  piDir = makeTempDir("compact-after-pi").dir;
  Pi = await importPiSessionManager();
  PiCompaction = await importPiCompaction();
  PiMessages = await importPiMessages();
});
afterAll(() => tmp?.cleanup());

const cli = (...args: string[]) => runCli(args, { PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_NOW: NOW });
const lastLine = (file: string) => JSON.parse(readFileSync(file, "utf8").trimEnd().split("\n").pop()!);

describe("rescue: a session whose last request overflowed the window", () => {
  const RESCUE = path.join(FIXTURES, "compact-overflow-rescue.jsonl");

  it("the fixture ends as pi-ai records an overflow (Pi's isContextOverflow), after the user's message", async () => {
    const session = await loadSession(RESCUE);
    const [user, failed] = session.branch.slice(-2).map((e) => (e.type === "message" ? (e.message as any) : undefined));
    expect(user.role).toBe("user");
    expect(failed).toMatchObject({ role: "assistant", content: [], stopReason: "error", provider: "anthropic", model: "claude-sonnet-4-5" });
    const { isContextOverflow } = await import("@earendil-works/pi-ai");
    expect(isContextOverflow(failed)).toBe(true);
    // Derived from the shared session, entry for entry: every kept id is one of the original's.
    const original = await loadSession(path.join(SHARED_SESSIONS, "pimono-large-session.migrated-v3.jsonl"));
    const ids = new Set(original.entries.map((e) => e.id));
    expect(session.entries.slice(0, -2).every((e) => ids.has(e.id))).toBe(true);
    expect(session.entries.length).toBe(252);
  });

  it("after compact it resumes within the window with reserveTokens to spare, by Pi's own estimate", async () => {
    const file = copyInto(tmp.dir, RESCUE);
    const r = await cli("compact", file, "--json");
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout).sessions[0];
    expect(report).toMatchObject({ status: "compacted", contextWindow: 200000, trigger: { piWouldCompact: true, reason: "overflow" }, fits: true });
    const entry = lastLine(file);

    const sm = Pi.SessionManager.open(copyInto(tmp.dir, file, "rescued-pi.jsonl"));
    const estimate = PiCompaction.estimateProjectedContextTokens(sm.buildSessionProjection(), sm.getBranch()).tokens;
    expect(estimate).toBe(report.piEstimate.after);
    expect(estimate).toBeLessThanOrEqual(200_000 - 16_384);
    expect(PiCompaction.shouldCompact(estimate, 200_000, PiCompaction.DEFAULT_COMPACTION_SETTINGS)).toBe(false);
    // Pi ignores an overflow recorded before its latest compaction (AgentSession._checkCompaction).
    const failed = sm.getBranch().find((e: any) => e.message?.stopReason === "error" && e.id === "0f3e1a02").message;
    expect(failed.timestamp).toBeLessThanOrEqual(Date.parse(entry.timestamp));
    // The user's last message is kept, so "continue" picks it up; the failed attempt is not sent.
    const llm = PiMessages.convertToLlm(sm.buildSessionContext().messages);
    const sent = piTransform(llm);
    expect(sent.some((m: any) => m.role === "user" && JSON.stringify(m.content).includes("Fix those type errors in the TUI package"))).toBe(true);
    expect(sent.some((m: any) => m.role === "assistant" && m.stopReason === "error")).toBe(false);
    expect(sent[0]).toMatchObject({ role: "user" });
    expect(JSON.stringify(sent[0].content)).toContain("The conversation history before this point was compacted into the following summary");

    const again = await cli("compact", file, "--if-over", "--json");
    expect(JSON.parse(again.stdout).sessions[0].status).toBe("already-compacted");
  });
});

describe("render, metrics and query on a compacted session", () => {
  it("kimchi-session after run (pruned) and compact: the context starts with the summary, refs still resolve", async () => {
    const file = copyInto(tmp.dir, path.join(SHARED_SESSIONS, "kimchi-session.v3.jsonl"), "kimchi.jsonl");
    // The extension's entries only: written for stock Pi, the context is too small left for Pi to compact.
    const run = await cli("run", file, "--target", "extension", "--json");
    expect(run.code, run.stderr).toBe(0);
    const beforeMetrics = JSON.parse((await cli("metrics", file, "--json")).stdout).sessions[0];

    const compacted = await cli("compact", file, "--json");
    expect(compacted.code, compacted.stderr).toBe(0);
    const report = JSON.parse(compacted.stdout).sessions[0];
    expect(report.status).toBe("compacted");

    const render = await cli("render", file, "--json");
    expect(render.code, render.stderr).toBe(0);
    const doc = JSON.parse(render.stdout);
    expect(doc.messages[0].role).toBe("user");
    expect(
      doc.messages[0].content[0].text.startsWith(
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\n",
      ),
    ).toBe(true);
    // Pi's own context after compaction, converted: what render starts from.
    const sm = Pi.SessionManager.open(copyInto(tmp.dir, file, "kimchi-pi.jsonl"));
    const piLlm = PiMessages.convertToLlm(sm.buildSessionContext().messages);
    expect(doc.stats[0]).toMatchObject({ phase: "projection", messages: piLlm.length });
    const human = await cli("render", file);
    expect(human.code).toBe(0);

    const metrics = await cli("metrics", file, "--json");
    expect(metrics.code, metrics.stderr).toBe(0);
    const m = JSON.parse(metrics.stdout).sessions[0];
    expect(m.context.before.tokens).toBeLessThan(beforeMetrics.context.before.tokens);
    expect(m.index.records).toBe(beforeMetrics.index.records);

    // A ref written by run before the compaction still gives its original output.
    const q = await cli("query", "t1", "--full", "--json", "--session", file);
    expect(q.code, q.stderr).toBe(0);
    const result = JSON.parse(q.stdout).results[0];
    expect(result.output.length).toBeGreaterThan(0);
    expect(result.outputSource).toBe("record");
    const budget = await cli("budget", file, "--json");
    expect(budget.code, budget.stderr).toBe(0);
  });
});

describe("run after compact: chains the compaction took out of the context are no faults", () => {
  /** The `context-prune-diagnostic` entries of a file, as `kind: detail`. */
  const diagnostics = (file: string) =>
    readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((e) => e.customType === "context-prune-diagnostic")
      .map((e) => `${e.data.kind}: ${e.data.detail}`);
  const lines = (file: string) => readFileSync(file, "utf8").trimEnd().split("\n").length;
  const faults = async (file: string) => JSON.parse((await cli("metrics", file, "--json", "--quiet")).stdout).sessions[0].diagnostics;

  it.each([
    ["pimono-large-session.migrated-v3.jsonl", "pi"],
    ["kimchi-session.v3.jsonl", "pi"],
    ["kimchi-session.v3.jsonl", "extension"],
  ])("%s, target %s: run → compact → run appends nothing; metrics counts no unresolved range", async (name, target) => {
    const file = copyInto(tmp.dir, path.join(SHARED_SESSIONS, name), `${target}-${name}`);
    const first = await cli("run", file, "--target", target, "--json", "--quiet");
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).sessions[0].chains.compressed).toBeGreaterThan(0);
    const before = await faults(file);
    expect(before.unresolvedRanges.count).toBe(0);
    // A small keepRecentTokens: the pruned context fits the default, and the cut must take chains away.
    const compacted = await cli("compact", file, "--keep-recent-tokens", "4k", "--json", "--quiet");
    expect(JSON.parse(compacted.stdout).sessions[0].status).toBe("compacted");
    // Chains now behind the compaction: Pi sends none of them raw, and nothing is a fault.
    const after = await faults(file);
    expect(after.unresolvedRanges).toEqual({ count: 0, places: [] });
    const recorded = diagnostics(file);
    const size = lines(file);
    const dry = JSON.parse((await cli("run", file, "--target", target, "--dry-run", "--json", "--quiet")).stdout).sessions[0];
    expect(dry.entriesAppended).toBe(0);
    const again = await cli("run", file, "--target", target, "--quiet");
    expect(again.code, again.stderr).toBe(0);
    expect(lines(file)).toBe(size);
    expect(diagnostics(file)).toEqual(recorded);
    // kimchi has no fault of its own: the CI gate passes on what condense wrote.
    if (name.startsWith("kimchi")) expect((await cli("metrics", file, "--fail-on-diagnostics", "--quiet")).code).toBe(0);
  });
});

describe("budget: where Pi itself would have auto-compacted", () => {
  const BEFORE = path.join(SHARED_SESSIONS, "pimono-before-compaction.migrated-v3.jsonl");

  it("pimono-before-compaction: right before the compaction Pi really recorded (line 629, tokensBefore 185,014)", async () => {
    const r = await cli("budget", BEFORE, "--json");
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.compaction).toEqual({ enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 });
    expect(doc.summary.piCompactions).toEqual([
      {
        entryId: "7db2b1e2",
        tokens: 184202,
        reason: "threshold",
        check: "before-request",
        contextWindow: 200000,
        level: 183616,
        turn: 280,
        turnIs: "request",
        line: 628,
      },
    ]);
    const lines = readFileSync(BEFORE, "utf8").split("\n");
    const recorded = JSON.parse(lines[628]);
    expect(recorded).toMatchObject({ type: "compaction", parentId: "7db2b1e2", tokensBefore: 185014 });
    const row = doc.rows.find((x: any) => x.entryId === "7db2b1e2");
    expect(row).toMatchObject({ turn: 280, piTokens: 184202, piCompaction: "threshold" });
    expect(doc.rows.filter((x: any) => x.piCompaction !== null)).toHaveLength(1);

    const human = await cli("budget", BEFORE);
    expect(human.stdout).toContain(
      "Pi would auto-compact (reserveTokens 16,384): before the request of turn 280, entry 7db2b1e2, line 628 (~184,202 > 183,616 = 200,000 − 16,384)",
    );
    expect(human.stdout).toMatch(/ 280 {2}7db2b1e2 {3}628 .* 184,202 {2}compacts \(threshold\)/);
    expect(human.stdout).toContain("B budget, D delta, C Pi compacts");
    expect(human.stdout.split("\n").some((l) => /^ {6,}C\s*$/.test(l))).toBe(true);
  });

  it("--reserve-tokens and Pi's settings move or switch off the point", async () => {
    const wide = JSON.parse((await cli("budget", BEFORE, "--reserve-tokens", "50000", "--json")).stdout);
    expect(wide.summary.piCompactions[0].level).toBe(150000);
    expect(wide.summary.piCompactions[0].turn).toBeLessThan(280);
    const off = makeTempDir("budget-off");
    writeFileSync(path.join(off.dir, "settings.json"), JSON.stringify({ compaction: { enabled: false } }));
    const r = await runCli(["budget", BEFORE, "--no-chart"], { PI_CODING_AGENT_DIR: off.dir, NO_COLOR: "1" });
    expect(r.stdout).toContain("Pi's auto-compaction is off (compaction.enabled: false)");
    off.cleanup();
  });

  it("the overflow fixture: Pi compacts after the request that overflowed", async () => {
    const doc = JSON.parse((await cli("budget", path.join(FIXTURES, "compact-overflow-rescue.jsonl"), "--json")).stdout);
    expect(doc.summary.piCompactions).toEqual([
      {
        entryId: "0f3e1a02",
        tokens: 177671,
        reason: "overflow",
        check: "before-request",
        contextWindow: 200000,
        level: 183616,
        turn: null,
        turnIs: "none",
        line: 253,
      },
    ]);
  });

  for (const name of [
    "pimono-before-compaction.migrated-v3.jsonl",
    "gjc-03-raddit-dashboard-pr.v3.jsonl",
    "pi-generated-compacted.v3.jsonl",
    "kimchi-session.v3.jsonl",
  ]) {
    it(`${name}: Pi's estimate before each request equals Pi's estimateProjectedContextTokens on the branch so far`, async () => {
      const session = await loadSession(path.join(SHARED_SESSIONS, name));
      const ours = contextBeforeRequests(session.branch);
      const branch = Pi.SessionManager.open(copyInto(tmp.dir, path.join(SHARED_SESSIONS, name), `est-${name}`)).getBranch();
      expect(ours.length).toBeGreaterThan(0);
      const step = Math.max(1, Math.floor(ours.length / 60));
      for (let k = 0; k < ours.length; k += step) {
        const { index, tokens } = ours[k];
        const prefix = branch.slice(0, index);
        const projection = prefix.length > 0 ? Pi.buildSessionProjection(prefix, prefix[prefix.length - 1].id) : { entries: [], messages: [] };
        expect(tokens, `${name} request at branch index ${index}`).toBe(PiCompaction.estimateProjectedContextTokens(projection, prefix).tokens);
      }
    });
  }

  it("sessions without any recorded usage (every message estimated, the system prompt replayed)", async () => {
    for (const name of ["pi-generated-branched.v3.jsonl", "kimchi-statusline.v3.jsonl"]) {
      const file = path.join(tmp.dir, `no-usage-${name}`);
      const lines = readFileSync(path.join(SHARED_SESSIONS, name), "utf8")
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l));
      for (const e of lines) if (e.type === "message" && e.message?.role === "assistant") delete e.message.usage;
      writeFileSync(file, `${lines.map((e) => JSON.stringify(e)).join("\n")}\n`);
      const session = await loadSession(file);
      const branch = Pi.SessionManager.open(copyInto(tmp.dir, file, `pi-no-usage-${name}`)).getBranch();
      const estimates = contextBeforeRequests(session.branch);
      expect(estimates.length).toBeGreaterThan(2);
      for (const { index, tokens } of estimates) {
        const prefix = branch.slice(0, index);
        const projection = Pi.buildSessionProjection(prefix, prefix[prefix.length - 1].id);
        expect(tokens, `${name} at ${index}`).toBe(PiCompaction.estimateProjectedContextTokens(projection, prefix).tokens);
      }
    }
  });

  it("the compaction fixtures, where the estimate must project the prefix in full (after a compaction or a context edit)", async () => {
    for (const name of ["compact-after-compaction.jsonl", "compact-recovery-omission.jsonl"]) {
      const session = await loadSession(path.join(FIXTURES, name));
      const branch = Pi.SessionManager.open(copyInto(tmp.dir, path.join(FIXTURES, name), `est-${name}`)).getBranch();
      for (const { index, tokens } of contextBeforeRequests(session.branch)) {
        const prefix = branch.slice(0, index);
        const projection = Pi.buildSessionProjection(prefix, prefix[prefix.length - 1].id);
        expect(tokens, `${name} at ${index}`).toBe(PiCompaction.estimateProjectedContextTokens(projection, prefix).tokens);
      }
    }
  });
});
