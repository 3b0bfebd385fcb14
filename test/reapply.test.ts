/**
 * Pi writes after `run` from its stale in-memory leaf (issue 16): Pi 1.6's own SessionManager, opened
 * before the run, appends a new turn as Pi would; condense's entries are then off Pi's active branch.
 * The next `run` says which entries and when, and applies them again on the new branch with the
 * summaries they hold: the local model server is asked only for the new batch, never for the stored
 * ones; Pi, opening the file afresh, then sees the same summaries on its branch.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_INSTRUCTIONS } from "../src/summarize/prompt.js";
import { answerFromSummary, composeSummary, withoutRecoveryHint, withRecoveryHint } from "../src/summarize/refs.js";
import { runCli } from "./cli-harness.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";
import { importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

type Entry = { id: string; type: string; customType?: string; content?: unknown; data?: { rangeSummaryText?: string } };

describe("Pi appends after run with a stale leaf; run applies condense's entries again", () => {
  let server: Awaited<ReturnType<typeof startFakeLlmServer>>;
  let Pi: any;
  const tmp = makeTempDir("reapply");
  const env = () => ({ PI_CODING_AGENT_DIR: tmp.dir, CONDENSE_NOW: "2026-03-01T12:00:00.000Z", NO_COLOR: "1" });
  beforeAll(async () => {
    server = await startFakeLlmServer();
    Pi = await importPiSessionManager();
    writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    writeFileSync(
      path.join(tmp.dir, "models.json"),
      JSON.stringify({ providers: { local: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "k", models: [{ id: "m1" }] } } }),
    );
  });
  afterAll(async () => {
    await server.close();
    tmp.cleanup();
  });

  /** Pi's view of the file as it would open it now: the active branch's entries. */
  const piBranch = (file: string): Entry[] => {
    const copy = `${file}.pi-view.jsonl`;
    copyFileSync(file, copy);
    return Pi.SessionManager.open(copy).getBranch();
  };
  /**
   * The batch summaries, and the fused answer of each chain (its body before the calls no summary
   * covered, which name refs allocated in run order — the new batch takes the next number first),
   * without the recovery hint a run adds to one of them.
   */
  const summaries = (entries: Entry[]) =>
    entries
      .filter((e) => e.customType === "context-prune-summary" || e.customType === "context-prune-chain")
      .map((e) =>
        JSON.stringify([
          typeof e.content === "string" ? withoutRecoveryHint(e.content) : null,
          e.data?.rangeSummaryText ? withoutRecoveryHint(e.data.rangeSummaryText).split("\n\nNot summarized in this span:\n")[0] : null,
        ]),
      );

  it("reports, re-applies with 0 model calls for the stored summaries, and Pi then sees them", async () => {
    const file = path.join(tmp.dir, "s.jsonl");
    copyFileSync(path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), file);
    const originalLines = readFileSync(file, "utf8").trimEnd().split("\n").length;
    // Pi has the session open: its leaf is in memory.
    const pi = Pi.SessionManager.open(file);

    const first = await runCli(["run", file, "--model", "local/m1", "--json"], env());
    expect(first.code).toBe(0);
    const firstReport = JSON.parse(first.stdout).sessions[0];
    const asked = server.requests.length;
    expect(firstReport.usage.calls).toBe(asked);
    const written = readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .slice(originalLines)
      .map((l) => JSON.parse(l) as Entry);
    expect(written).toHaveLength(firstReport.entriesAppended);

    // Pi's next turn, as Pi writes it: a child of its stale leaf (one tool call with a long output).
    const now = Date.parse("2026-03-01T12:05:00.000Z");
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const assistant = (content: unknown[], stopReason: string, t: number) => ({
      role: "assistant",
      content,
      api: "openai-completions",
      provider: "local",
      model: "m1",
      usage,
      stopReason,
      timestamp: t,
    });
    const displacing = pi.appendMessage({ role: "user", content: [{ type: "text", text: "Now list the test files." }], timestamp: now });
    pi.appendMessage(assistant([{ type: "toolCall", id: "call_new_1", name: "bash", arguments: { command: "ls test/" } }], "toolUse", now + 1000));
    const listing = Array.from({ length: 120 }, (_, i) => `test/file-${i}.test.ts`).join("\n");
    pi.appendMessage({
      role: "toolResult",
      toolCallId: "call_new_1",
      toolName: "bash",
      content: [{ type: "text", text: listing }],
      isError: false,
      timestamp: now + 2000,
    });
    pi.appendMessage(assistant([{ type: "text", text: "There are 120 test files." }], "stop", now + 3000));
    // Pi no longer sees condense's entries.
    const onPiBranch = new Set(piBranch(file).map((e) => e.id));
    expect(written.filter((e) => onPiBranch.has(e.id))).toEqual([]);

    // Pi stamps its entries with the wall clock.
    const piStamp = (
      readFileSync(file, "utf8")
        .split("\n")
        .map((l) => (l ? JSON.parse(l) : {}))
        .find((e) => e.id === displacing) as { timestamp: string }
    ).timestamp;
    const piClock = `${piStamp.slice(0, 19).replace("T", " ")} UTC`;

    // The dry run says which entries, when, and what took their place; asks only for the new batch.
    const before = server.requests.length;
    const dry = await runCli(["run", file, "--model", "local/m1", "--dry-run", "--json"], env());
    expect(dry.code).toBe(0);
    const dryReport = JSON.parse(dry.stdout).sessions[0];
    const firstLine = originalLines + 1;
    expect(dryReport.stranded).toEqual([
      {
        entries: written.length,
        firstLine,
        lastLine: firstLine + written.length - 1,
        writtenAt: "2026-03-01T12:00:00.000Z",
        displacedBy: { id: displacing, line: firstLine + written.length, timestamp: piStamp },
      },
    ]);
    // Nothing the first run asked is asked again: every stored answer is reused. New are the new
    // batch and the fusion of a chain Pi's new turn made old enough to compress.
    const firstAsked = new Set(server.requests.slice(0, asked).map((r) => r.system + r.user));
    const newRequests = server.requests.slice(before);
    expect(newRequests.filter((r) => firstAsked.has(r.system + r.user))).toEqual([]);
    expect(newRequests.filter((r) => r.system === BATCH_INSTRUCTIONS).map((r) => r.user.includes('"command": "ls test/"'))).toEqual([true]);
    expect(newRequests).toHaveLength(2);
    expect(dryReport.usage).toMatchObject({ calls: 2, reused: { cache: 0, session: asked } });
    expect(dryReport.chains.rangesSummarized).toBe(firstReport.chains.rangesSummarized + 1);

    // The real run: the same, written; the warning names the entries and Pi's line.
    const real = await runCli(["run", file, "--model", "local/m1"], env());
    expect(real.code).toBe(0);
    expect(server.requests.length - before).toBe(4);
    expect(real.stderr).toBe(
      `warning: ${file}: ${written.length} entries condense wrote at 2026-03-01 12:00:00 UTC (lines ${firstLine}–${firstLine + written.length - 1}) are off the active branch — ` +
        `Pi appended line ${firstLine + written.length} (${piClock}) to the branch before them, so Pi does not see them; applying them again on the current branch, reusing the summaries they hold\n`,
    );
    expect(real.stdout).toContain(`${file}: 2 calls to local/m1 · `);
    expect(real.stdout).toContain(`· ${asked} summaries reused from the session`);

    // Pi, opening the file now, has condense's summaries on its branch: the stored ones, unchanged.
    const branch = piBranch(file);
    const onBranch = summaries(branch);
    for (const s of summaries(written)) expect(onBranch).toContain(s);
    expect(onBranch.length).toBe(summaries(written).length + 2);
    // condense's entries end the branch (for stock Pi, the list of its context edits may come last).
    expect(branch[branch.length - 1].customType).toMatch(/^(context-prune-|condense-context-edits$)/);

    // Done: the stranded copy is no longer reported, nothing left to do.
    const again = await runCli(["run", file, "--model", "local/m1", "--json"], env());
    expect(again.stderr).toBe("");
    expect(JSON.parse(again.stdout).sessions[0]).toMatchObject({ entriesAppended: 0, written: null });
    expect(JSON.parse(again.stdout).sessions[0].stranded).toBeUndefined();
  });

  it("without a model: the footer names the deterministic summarizer and the summaries reused", async () => {
    const file = path.join(tmp.dir, "det.jsonl");
    copyFileSync(path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), file);
    const pi = Pi.SessionManager.open(file);
    expect((await runCli(["run", file, "-q"], env())).code).toBe(0);
    // Pi's next turn from its stale leaf: condense's entries are off the branch.
    pi.appendMessage({ role: "user", content: [{ type: "text", text: "Thanks." }], timestamp: Date.parse("2026-03-01T12:05:00.000Z") });
    // The reading commands say so too: what they show is what Pi sends, without those entries.
    const render = await runCli(["render", file, "--stats"], env());
    const metrics = await runCli(["metrics", file], env());
    for (const r of [render, metrics]) {
      expect(r.code).toBe(0);
      // Pi stamps the entry it appends with its own clock.
      expect(
        r.stderr.startsWith(
          `warning: ${file}: 105 entries condense wrote at 2026-03-01 12:00:00 UTC (lines 113–217) are off the active branch — Pi appended line 218 (`,
        ),
      ).toBe(true);
      expect(r.stderr).toContain(
        ") to the branch before them, so Pi does not see them; `condense run` applies them again on the current branch, reusing the summaries they hold\n",
      );
    }
    const dry = JSON.parse((await runCli(["run", file, "--dry-run", "--json"], env())).stdout).sessions[0];
    const reused = dry.usage.reused.session;
    expect(reused).toBeGreaterThan(1);
    expect(dry.usage.calls).toBe(0);
    const real = await runCli(["run", file], env());
    expect(real.code).toBe(0);
    expect(real.stdout.split("\n")).toContain(`${file}: deterministic summarizer · ${reused} summaries reused from the session`);
    expect(real.stdout).not.toContain("no call to deterministic");
  });
});

describe("answerFromSummary: a stored summary back to the answer it was composed from", () => {
  const refs = [
    { shortId: "t7", toolCallId: "a", resultTimestamp: 1 },
    { shortId: "t8", toolCallId: "b" },
    { shortId: "t9", toolCallId: "c", resultTimestamp: 3 },
  ];
  const names = ["bash", "read", "grep"];
  it.each([
    "- [[1:bash]] ran ls\n- [[2:read]] read a.ts\n  - detail\n- [[3:grep]] found 3",
    "* [[2:Read]]   read it\n[[1:bash]]\nplain line with [[3:grep]] inside",
    "- [[4:bash]] a label the batch does not have\n- [[1:grep]] a name that does not match",
    "```\n[[1:bash]] in a fence\n- `t7` literal in a fence\n```\n- `t8` the model wrote a ref itself",
    "",
  ])("compose(answerFromSummary(compose(%j))) is compose(that answer)", (answer) => {
    const stored = composeSummary(answer, refs, names);
    const back = answerFromSummary(stored, refs, names);
    expect(composeSummary(back, refs, names)).toBe(stored);
    // With other refs, the same summary naming them instead (a ref the model wrote itself at a
    // line start is renamed too, as if it had been a label).
    if (answer.includes("- `t8`")) return;
    const others = refs.map((r, i) => ({ ...r, shortId: `t${20 + i}` }));
    expect(composeSummary(back, others, names)).toBe(composeSummary(answer, others, names));
  });

  it("the recovery hint a run adds to one summary, and the footer of refs not named inline, are not part of the answer", () => {
    const stored = composeSummary("- [[1:bash]] ran ls", refs, names);
    expect(stored).toContain("Also pruned here: `t8`, `t9`.");
    expect(answerFromSummary(withRecoveryHint(stored), refs, names)).toBe("- [[1:bash]] ran ls");
    expect(composeSummary(answerFromSummary(withRecoveryHint(stored), refs, names), refs, names)).toBe(stored);
  });

  it("labels come back where refs were substituted", () => {
    const stored = composeSummary("- [[1:bash]] ran ls\n- [[3:grep]] found 3", refs, names);
    expect(answerFromSummary(stored, refs, names)).toBe("- [[1:bash]] ran ls\n- [[3:grep]] found 3");
  });
});
