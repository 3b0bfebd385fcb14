/**
 * `condense report` (issue 20): its document holds the figures the other commands print — equal to
 * `metrics --json`, `budget --json`, `run --dry-run --json`, `render --as pi-only [--dry-run] --json`
 * and `compact --dry-run --json` on shared sessions and fixtures; the per-turn estimate equals Pi's
 * own estimate of its projection; the facts (usage, compactions, model switches, largest outputs
 * with the refs `query` resolves) are right; the page embeds exactly that document, inlines the
 * chart library, loads nothing from the network, and stays under 2 MB for the largest shared
 * session; the command's files, exit codes and errors.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { getCurrentSystemMessage } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { estimatesThroughRequests } from "../src/compact/trigger.js";
import { piCompactionOutlook } from "../src/report/budget-compaction.js";
import { piCompactsText } from "../src/report/html-client.js";
import type { SessionReport } from "../src/report/session-report.js";
import { loadSession } from "../src/session/session.js";
import { fixture, runCli, SHARED_SESSIONS, tempDir } from "./cli-capture.js";
import { runCli as harness } from "./cli-harness.js";
import { copyInto, fixedLengthTempDir, importPiCompaction, importPiSessionManager, sharedSessionFiles } from "./helpers.js";

const NOW = { CONDENSE_NOW: "2026-01-01T00:00:00.000Z" };
const shared = (name: string) => path.join(SHARED_SESSIONS, name);
/** The three shared sessions the report is checked on, and the largest shared session. */
const THREE = ["pimono-before-compaction.migrated-v3.jsonl", "kimchi-session.v3.jsonl", "specstory-real-world-trimmed.v3.jsonl"];
const LARGEST = sharedSessionFiles().sort((a, b) => statSync(shared(b)).size - statSync(shared(a)).size)[0];

/** `report --json` of one file, with the CLI's own fixed clock. */
async function reportOf(file: string): Promise<any> {
  const r = await harness(["report", file, "--json"], env());
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const tmp = tempDir("report");
afterAll(() => tmp.cleanup());
/** A fixed clock, no colours, and Pi's folder without settings (every command reads the same configuration). */
const env = () => ({ ...NOW, NO_COLOR: "1", PI_CODING_AGENT_DIR: path.join(tmp.dir, "no-pi-settings") });

describe("report --json: the figures other commands print", () => {
  const files = [...THREE.map(shared), fixture("budget-null-usage-after-compaction.jsonl"), fixture("compact-overflow-rescue.jsonl")];
  for (const file of files) {
    it(`${path.basename(file)}: metrics, budget, run, render --as pi-only and compact agree`, async () => {
      const run = async (...args: string[]) => {
        const r = await harness([...args, "--json"], env());
        expect([0, 3], r.stderr).toContain(r.code);
        return JSON.parse(r.stdout);
      };
      const doc = await reportOf(file);
      expect(doc.schema).toBe("condense.report/1");
      expect(doc.failures).toEqual([]);
      const [s] = doc.sessions;
      expect(s.metrics).toEqual((await run("metrics", file)).sessions[0]);
      const { schema: _b, session: _s, warnings: _bw, ...budget } = await run("budget", file);
      expect(s.budget).toEqual(budget);
      const {
        dryRun: _d,
        written: _w,
        bytesAppended: _a,
        wallMs: _m,
        label: _l,
        disk: _k,
        warnings: _rw,
        ...runReport
      } = (await run("run", file, "--dry-run", "--summarizer", "deterministic")).sessions[0];
      const { piOnly, ...extension } = s.run.context;
      // run's own report carries stock Pi's figures too (native mode): compared with render --as pi-only below.
      const { piOnly: runPiOnly, ...runContext } = runReport.context;
      expect({ ...s.run, context: extension, target: undefined }).toEqual({ ...runReport, context: runContext, target: undefined });
      expect(runPiOnly).toEqual(piOnly);
      expect(s.run.target).toEqual(runReport.target);
      expect(piOnly).toEqual((await run("render", file, "--as", "pi-only")).context);
      expect(piOnly).toEqual((await run("render", file, "--as", "pi-only", "--dry-run", "--summarizer", "deterministic")).context);
      const { wallMs: _c, warnings: _cw, ...compact } = (await run("compact", file, "--dry-run")).sessions[0];
      const { warnings: _ow, ...ours } = s.compact;
      expect(ours).toEqual(compact);
    });
  }

  it("an archive: one section per session in argument order, totals are sums, a failing file is listed and the others reported (exit 1)", async () => {
    const bad = path.join(tmp.dir, "not-a-session.jsonl");
    writeFileSync(bad, "this is not JSON\n");
    const r = await runCli("report", shared(THREE[2]), bad, fixture("example-session.jsonl"), "--json");
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions.map((s: any) => path.basename(s.session))).toEqual([THREE[2], "example-session.jsonl"]);
    expect(doc.failures).toHaveLength(1);
    expect(doc.failures[0].session).toBe(bad);
    expect(doc.totals.sessions).toBe(2);
    expect(doc.totals.failed).toBe(1);
    expect(doc.totals.bytes).toBe(statSync(shared(THREE[2])).size + statSync(fixture("example-session.jsonl")).size);
    expect(doc.totals.runAfterTokens).toBe(doc.sessions[0].run.context.after.tokens + doc.sessions[1].run.context.after.tokens);
    expect(new Set(doc.sessions.map((s: any) => s.anchor)).size).toBe(2);
    for (const s of doc.sessions) expect(s.anchor).toMatch(/^s-[A-Za-z0-9_-]+$/);
  });
});

describe("the per-turn estimate", () => {
  let Pi: any;
  let PiCompaction: any;
  beforeAll(async () => {
    Pi = await importPiSessionManager();
    PiCompaction = await importPiCompaction();
  });

  for (const name of ["pimono-before-compaction.migrated-v3.jsonl", "pi-generated-compacted.v3.jsonl", "kimchi-session.v3.jsonl"]) {
    it(`${name}: Pi's estimateTokens over Pi's projection of the branch through each request`, async () => {
      const ours = estimatesThroughRequests((await loadSession(shared(name))).branch);
      const branch = Pi.SessionManager.open(copyInto(tmp.dir, shared(name), `est-${name}`)).getBranch();
      expect(ours.length).toBeGreaterThan(0);
      const step = Math.max(1, Math.floor(ours.length / 50));
      for (let k = 0; k < ours.length; k += step) {
        const { index, tokens } = ours[k];
        const prefix = branch.slice(0, index + 1);
        const { messages } = Pi.buildSessionProjection(prefix, prefix[prefix.length - 1].id);
        const system = getCurrentSystemMessage(messages);
        let expected = system ? PiCompaction.estimateTokens(system) : 0;
        for (const m of messages) if (m.role !== "system") expected += PiCompaction.estimateTokens(m);
        expect(tokens, `${name} request at branch index ${index}`).toBe(expected);
      }
    });
  }
});

describe("report facts", () => {
  it("pimono-before-compaction: the two compactions Pi recorded, placed on the turns after them; no model switch; usage summed over the file", async () => {
    const [s] = (await reportOf(shared("pimono-before-compaction.migrated-v3.jsonl"))).sessions;
    expect(s.markers.compactions.map((c: any) => [c.line, c.tokensBefore, c.turn])).toEqual([
      [360, 175_004, 162],
      [629, 185_014, 281],
    ]);
    expect(s.markers.modelSwitches).toEqual([]);
    // The compaction at line 629 comes right after the turn where Pi's own trigger fires (budget, issue 14).
    expect(s.budget.summary.piCompactions.map((p: any) => p.turn)).toEqual([280]);
    // Usage read from the raw lines: every assistant message's usage, cost.total summed.
    const lines = readFileSync(shared("pimono-before-compaction.migrated-v3.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const usages = lines.filter((e) => e.type === "message" && e.message?.role === "assistant" && e.message.usage).map((e) => e.message.usage);
    expect(s.usage.requests).toBe(usages.length);
    expect(s.usage.output).toBe(usages.reduce((n: number, u: any) => n + u.output, 0));
    expect(s.usage.cost).toBeCloseTo(
      usages.reduce((n: number, u: any) => n + (u.cost?.total ?? 0), 0),
      9,
    );
    expect(s.bytes).toBe(statSync(shared("pimono-before-compaction.migrated-v3.jsonl")).size);
    expect(s.label).toMatchObject({ shortId: "ffae836b", date: "2025-12-09" });
  });

  it("kimchi-session: every model switch of the branch, from → to, on the turn where it answered", async () => {
    const [s] = (await reportOf(shared("kimchi-session.v3.jsonl"))).sessions;
    const session = await loadSession(shared("kimchi-session.v3.jsonl"));
    const models = session.branch
      .filter((e: any) => e.type === "message" && e.message.role === "assistant")
      .map((e: any) => `${e.message.provider}/${e.message.model}`);
    const expected = models.flatMap((m, i) => (i > 0 && m !== models[i - 1] ? [[models[i - 1], m]] : []));
    expect(s.markers.modelSwitches.map((m: any) => [m.from, m.to])).toEqual(expected);
    for (const m of s.markers.modelSwitches) {
      if (m.turn === null) continue;
      const row = s.budget.rows.find((r: any) => r.turn === m.turn);
      expect(row.line).toBeGreaterThanOrEqual(m.line);
    }
  });

  it("the largest outputs are the largest tool results of the context, and each ref recovers its output byte-exact after run", async () => {
    const { dir } = tmp;
    const file = copyInto(dir, shared("kimchi-session.v3.jsonl"), "largest-kimchi.jsonl");
    const [s] = (await reportOf(file)).sessions;
    expect(s.largestOutputs).toHaveLength(10);
    const chars = s.largestOutputs.map((o: any) => o.chars);
    expect(chars).toEqual([...chars].sort((a: number, b: number) => b - a));
    // Independently: the text of every tool result on the branch, largest first.
    const session = await loadSession(file);
    const texts = session.branch
      .filter((e: any) => e.type === "message" && e.message.role === "toolResult")
      .map((e: any) =>
        (e.message.content as any[])
          .filter((b) => b.type === "text")
          .map((b) => b.text)
          .join(""),
      );
    expect(chars).toEqual(
      texts
        .map((t: string) => t.length)
        .sort((a: number, b: number) => b - a)
        .slice(0, 10),
    );
    for (const o of s.largestOutputs) expect(o.tokens).toBe(Math.ceil(o.chars / 4));
    const withRef = s.largestOutputs.filter((o: any) => o.ref !== null);
    expect(withRef.length).toBeGreaterThan(5);
    expect((await runCli("run", file, "--summarizer", "deterministic")).code).toBe(0);
    for (const o of withRef.slice(0, 3)) {
      expect(o.query).toBe(`condense query ${o.ref} --session ${file}`);
      const q = await runCli("query", o.ref, "--session", file, "--full");
      expect(q.code).toBe(0);
      const text = session.byId.get(o.entryId) as any;
      const original = (text.message.content as any[])
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join("");
      expect(q.stdout).toContain(original);
    }
  });
});

describe("report --html", () => {
  it("embeds exactly the --json document, inlines uPlot, allows no network, and stays under 2 MB for the largest shared session", async () => {
    const file = path.join(tmp.dir, "largest.html");
    const r = await harness(["report", shared(LARGEST), "--html", file], env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`wrote ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(\\d+ KB, 1 session\\)`));
    const page = readFileSync(file, "utf8");
    expect(Buffer.byteLength(page)).toBeLessThan(2 * 1024 * 1024);
    const embedded = /<script type="application\/json" id="condense-report">([\s\S]*?)<\/script>/.exec(page)?.[1] ?? "";
    expect(JSON.parse(embedded)).toEqual(JSON.parse((await harness(["report", shared(LARGEST), "--json"], env())).stdout));
    const uplot = readFileSync(path.join(__dirname, "../node_modules/uplot/dist/uPlot.iife.min.js"), "utf8");
    expect(page).toContain(uplot);
    // Nothing fetched: no src or href to another origin, and a policy that forbids every fetch.
    expect(page).not.toMatch(/\b(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i);
    expect(page).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-[^']+' 'sha256-[^']+';/);
  });

  it("--html - writes the page to stdout; with --json it is a usage error; an unwritable file is exit 2 and nothing is left", async () => {
    const small = shared("specstory-real-world-trimmed.v3.jsonl");
    const out = await runCli("report", small, "--html", "-");
    expect(out.code).toBe(0);
    expect(out.stdout.startsWith("<!doctype html>")).toBe(true);
    const both = await runCli("report", small, "--html", "-", "--json");
    expect(both.code).toBe(2);
    expect(both.stdout).toContain("--html - and --json both write to stdout");
    const blocker = path.join(tmp.dir, "a-file");
    writeFileSync(blocker, "x");
    const bad = await runCli("report", small, "--html", path.join(blocker, "page.html"));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`error: --html ${path.join(blocker, "page.html")}: ${blocker} is not a folder (nothing was written)\n`);
    expect(existsSync(path.join(blocker, "page.html"))).toBe(false);
  });

  it("bad flags are usage errors naming the flag (exit 2), and nothing is written", async () => {
    const small = shared("specstory-real-world-trimmed.v3.jsonl");
    const page = path.join(tmp.dir, "never.html");
    for (const [flag, value] of [
      ["--top", "0"],
      ["--context-window", "abc"],
      ["--reserve-tokens", "-5"],
      ["--jobs", "x"],
    ]) {
      const r = await runCli("report", small, flag, value, "--html", page);
      expect(r.code, flag).toBe(2);
      expect(r.stderr).toContain(`${flag}: expected`);
    }
    expect(existsSync(page)).toBe(false);
  });

  it("prints a table without --html or --json, and leaves the sessions untouched", async () => {
    const file = copyInto(tmp.dir, shared("kimchi-session.v3.jsonl"), "untouched.jsonl");
    const before = readFileSync(file);
    const r = await runCli("report", file);
    expect(r.code).toBe(0);
    const [s] = (await reportOf(file)).sessions;
    const n = (v: number) => v.toLocaleString("en-US");
    const row = r.stdout.split("\n").find((l) => l.includes(s.label.shortId)) ?? "";
    expect(s.label.shortId).toBe("019dcd91");
    expect(row).toContain(`${n(s.run.context.before.tokens)} → ${n(s.run.context.after.tokens)}`);
    expect(row).toContain(`${n(s.run.context.piOnly.before.tokens)} → ${n(s.run.context.piOnly.after.tokens)}`);
    // compact: what this Pi sends — stock Pi here (no settings: the extension is not installed).
    expect(s.compact.target.used).toBe("pi");
    expect(row).toContain(`${n(s.compact.context.piOnly.before.tokens)} → ${n(s.compact.context.piOnly.after.tokens)}`);
    // kimchi's model is not in pi-ai's registry: whether Pi would compact is unknown, never "never".
    expect(row).toContain("│ ? (window unknown) │");
    expect(r.stdout).not.toContain("never");
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(tmp.dir).filter((f) => f.startsWith("untouched"))).toEqual(["untouched.jsonl"]);
    // At 120 columns: the short figures with size, Pi's compaction and cost beside them.
    const medium = await harness(["report", file, shared(THREE[2])], { ...env(), COLUMNS: "120" });
    expect(
      medium.stdout
        .split("\n")[1]
        .split("│")
        .map((c) => c.trim()),
    ).toEqual(["", "session", "size", "Pi", "now", "run", "compact", "other", "Pi compacts", "cost", ""]);
    // At 80 columns: the narrow layout, every line within the width.
    const narrow = await harness(["report", file, shared(THREE[2])], { ...env(), COLUMNS: "80" });
    expect(narrow.code).toBe(0);
    expect(narrow.stdout).toContain("│ Pi    │   now │        run │    compact │ other │");
    expect(
      Math.max(
        ...narrow.stdout
          .trimEnd()
          .split("\n")
          .map((l) => l.length),
      ),
    ).toBeLessThanOrEqual(80);
  });
});

describe("the table leads with what the session's Pi sends: now → run → compact against one now", () => {
  // gjc-02, no Pi settings (stock Pi): 32,174 now; stock Pi after run 24,987, after compact 22,953;
  // the extension, not installed, would send 30,817 → 24,826 (the "other" figure). Stock Pi's stubs
  // name the session's path, so the copy lies at a path of one length on every machine.
  const copy = fixedLengthTempDir("report");
  afterAll(copy.cleanup);
  const file = copyInto(copy.dir, shared("gjc-02-inline-agent-design.v3.jsonl"));

  it("at 80 columns and wide", async () => {
    const narrow = await harness(["report", file], { ...env(), COLUMNS: "80" });
    expect(narrow.stdout).toContain("│ stock │ 32.2k │ 25.0k -22% │ 23.0k -29% │ 24.8k │");
    const wide = await harness(["report", file], { ...env(), COLUMNS: "250" });
    expect(wide.stdout).toMatch(/│ stock │ 32,174 → 24,987 \(-22%\) │ 32,174 → 22,953 \(-29%\) │ 30,817 → 24,826 \(-19%\) │ never +│ \$0\.00 │/);
  });
});

describe("where Pi itself would compact, when a model's window is unknown", () => {
  /** A session's budget replay with these turns' windows, these compaction points, auto-compaction on or off. */
  const session = (windows: (number | null)[], turns: number[], enabled = true) =>
    ({
      budget: {
        compaction: { enabled, reserveTokens: 16_384, keepRecentTokens: 20_000 },
        rows: windows.map((window) => ({ window })),
        summary: { piCompactions: turns.map((turn) => ({ turn })) },
      },
    }) as unknown as SessionReport;
  it("says never only when every window is known; unknown (?) otherwise, as compact --if-over does", () => {
    const cases: [SessionReport, string, string][] = [
      [session([200_000, 200_000], []), "never", "never"],
      [session([null, null], []), "unknown", "unknown (window unknown)"],
      [session([200_000, null], []), "unknown", "unknown (window unknown)"],
      [session([200_000, null], [1]), "at", "at turn 1 (window unknown on some turns)"],
      [session([200_000], [1]), "at", "at turn 1"],
      [session([null], [], false), "off", "off (compaction.enabled: false)"],
    ];
    for (const [s, state, text] of cases) {
      expect(piCompactionOutlook(s.budget).state).toBe(state);
      expect(piCompactsText(s)).toBe(text);
    }
    expect(piCompactionOutlook(session([200_000, null, null], []).budget).unknownTurns).toBe(2);
  });
});

describe("report --context-window takes token counts as budget and compact do", () => {
  it("200k, 0.2M and 200000 are one window; 0 is refused", async () => {
    const file = fixture("budget-final-reply-over-level.jsonl");
    const windows = [];
    for (const value of ["200k", "0.2M", "200000"]) {
      const r = await harness(["report", file, "--context-window", value, "--json"], env());
      expect(r.code, r.stderr).toBe(0);
      windows.push(JSON.parse(r.stdout).sessions[0].budget.rows.map((row: { window: number }) => row.window));
    }
    expect(windows).toEqual([
      [200_000, 200_000, 200_000],
      [200_000, 200_000, 200_000],
      [200_000, 200_000, 200_000],
    ]);
    const zero = await harness(["report", file, "--context-window", "0"], env());
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--context-window: expected a token count of at least 1 such as 120000, 120k or 1.2M, got "0"');
  });
});
