/**
 * Issue 12, the three kinds of input that lost or mislabelled tool output, each on fixtures of its
 * own (the failure files under names for their shapes, and variants: other providers' id styles,
 * three occurrences, short results, string `content`, a failed call, a huge result):
 * 1. one occurrence key `id@resultTimestamp` shared by several results (same id, same millisecond):
 *    they stay raw and an `occurrence-collision` diagnostic is recorded — no stub names another
 *    result's output;
 * 2. a message between a call and its result: the orphan sweep removes the result (the
 *    extension's rule), so it is never summarized, only indexed so that `query` recovers it;
 * 3. one assistant message calling the same id twice: results pair with calls in order; the first
 *    is summarized, the second (swept) indexed for recovery.
 * Each test asserts the exact request rendered after `run`, the exact entries and the exact text
 * `query` recovers; that a second `run` appends nothing; and that `run` never makes the context
 * larger. (The extension oracle checks every one of these fixtures against Pi too.)
 */
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CUSTOM_TYPES } from "../src/entries/types.js";
import type { Message, ToolResultMessage } from "../src/session/types.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, makeTempDir } from "./helpers.js";

const NOW = "2026-03-01T00:00:00.000Z";
const NOW_MS = Date.parse(NOW);
const temps: (() => void)[] = [];
afterEach(() => {
  for (const c of temps.splice(0)) c();
});

type Loose = Record<string, any>;

/** A fixture's tool-result messages as written (by entry id) and the file's entries. */
function fixtureResults(name: string): Map<string, Loose> {
  const out = new Map<string, Loose>();
  for (const line of readFileSync(path.join(FIXTURES, `${name}.jsonl`), "utf8").split("\n")) {
    if (line === "") continue;
    const e = JSON.parse(line);
    if (e.type === "message" && e.message.role === "toolResult") out.set(e.id, e.message);
  }
  return out;
}

/** The text a result holds: its text blocks joined with "\n", or its string content. */
function textOfResult(m: Loose): string {
  return typeof m.content === "string"
    ? m.content
    : m.content
        .filter((b: Loose) => b.type === "text")
        .map((b: Loose) => b.text)
        .join("\n");
}

interface Ran {
  file: string;
  before: Message[];
  after: Message[];
  report: Loose;
  appended: Loose[];
  /** `query --json` on these refs: the recovered output of each hit, in order. */
  query(...refs: string[]): Promise<{ code: number; outputs: string[]; keys: string[] }>;
}

/** Copy a fixture, render it, `run` it, render it again; a second `run` must append nothing. */
async function runFixture(name: string, args: string[] = []): Promise<Ran> {
  const { dir, cleanup } = makeTempDir("shapes");
  temps.push(cleanup);
  const file = copyInto(dir, path.join(FIXTURES, `${name}.jsonl`));
  const env = { CONDENSE_NOW: NOW };
  const render = async () => {
    const r = await runCli(["render", file, "--format", "json", "--quiet", ...args], env);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Message[];
  };
  // What Pi sends, in the measure every command reports (README "Context size").
  const sent = async () => JSON.parse((await runCli(["render", file, "--json", "--quiet", ...args], env)).stdout).context.before;
  const before = await render();
  const sentBefore = await sent();
  const size = statSync(file).size;
  const run = await runCli(["run", file, "--json", "--quiet", ...args], env);
  expect(run.code, run.stderr).toBe(0);
  const report = JSON.parse(run.stdout).sessions[0];
  const once = readFileSync(file);
  const appended = once
    .subarray(size)
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
  const after = await render();
  // Never larger than before (what run reported is what Pi now sends), and a second run has nothing left to do.
  const sentAfter = await sent();
  expect(sentAfter.chars).toBeLessThanOrEqual(sentBefore.chars);
  expect({ before: report.context.before, after: report.context.after }).toEqual({ before: sentBefore, after: sentAfter });
  expect((await runCli(["run", file, "--quiet", ...args], env)).code).toBe(0);
  expect(readFileSync(file).equals(once)).toBe(true);
  const query = async (...refs: string[]) => {
    const q = await runCli(["query", ...refs, "--session", file, "--json", "--full", "--quiet"], env);
    const doc = q.stdout ? JSON.parse(q.stdout) : { results: [] };
    return { code: q.code, outputs: doc.results.map((h: Loose) => h.output), keys: doc.results.map((h: Loose) => h.key) };
  };
  return { file, before, after, report, appended, query };
}

/** The stub the extension puts in place of a summarized result. */
function stub(m: Message, ref: string): ToolResultMessage {
  const r = m as ToolResultMessage;
  return {
    role: "toolResult",
    toolCallId: r.toolCallId,
    toolName: r.toolName,
    content: [{ type: "text", text: `[Summarized in pruner summary, ref \`${ref}\`. Use context_tree_query to retrieve full output.]` }],
    isError: false,
    timestamp: r.timestamp,
  };
}

/** The summary message as Pi sends it: the appended `context-prune-summary` as a user message. */
function summaryMessage(ran: Ran): Message {
  const entry = ran.appended.find((e) => e.customType === CUSTOM_TYPES.summary);
  expect(entry).toBeDefined();
  return { role: "user", content: [{ type: "text", text: entry!.content }], timestamp: NOW_MS } as Message;
}

const kinds = (ran: Ran) => ran.appended.map((e) => e.customType);
const diagnostics = (ran: Ran) => ran.appended.filter((e) => e.customType === CUSTOM_TYPES.diagnostic).map((e) => e.data);

describe("kind 1: several results share one occurrence key (same id, same millisecond)", () => {
  it("fail-03 (two turns, bash_23): both stay raw, one diagnostic, no ref names either output", async () => {
    const ran = await runFixture("reused-id-same-millisecond-two-turns");
    expect(ran.after).toStrictEqual(ran.before);
    expect(kinds(ran)).toEqual([CUSTOM_TYPES.diagnostic]);
    expect(diagnostics(ran)).toEqual([
      {
        kind: "occurrence-collision",
        detail:
          "bash_23@1778749927514: 2 tool results share this occurrence key (entries 4daab9bc, 1d15186c); condense leaves them raw (a stub is looked up by this key and could not tell them apart)",
      },
    ]);
    expect(ran.report.calls).toMatchObject({ ambiguous: 2, summarized: 0 });
    expect((await ran.query("t1")).code).toBe(1);
    expect((await ran.query("bash_23@1778749927514")).code).toBe(1);
  });

  it("three turns with an OpenAI call id at one millisecond stay raw; a fourth occurrence with its own time is summarized and its ref returns its own text", async () => {
    const ran = await runFixture("reused-id-same-millisecond-three-turns");
    const results = [...fixtureResults("reused-id-same-millisecond-three-turns").values()];
    const b = ran.before;
    expect(b.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    expect(ran.after).toStrictEqual([...b.slice(0, 8), stub(b[8], "t1"), b[9], summaryMessage(ran)]);
    const q = await ran.query("t1");
    expect(q.outputs).toEqual([textOfResult(results[3])]);
    expect(q.keys).toEqual([`call_Xq7Lk@${results[3].timestamp}`]);
    expect(diagnostics(ran).map((d) => d.kind)).toEqual(["occurrence-collision"]);
    expect(diagnostics(ran)[0].detail).toMatch(/^call_Xq7Lk@\d+: 3 tool results share this occurrence key \(entries \w{8}, \w{8}, \w{8}\)/);
    expect(ran.report.calls.ambiguous).toBe(3);
  });

  it("a batch holding one colliding call and one distinct call summarizes only the distinct one", async () => {
    const ran = await runFixture("reused-id-same-millisecond-with-distinct-call");
    const results = [...fixtureResults("reused-id-same-millisecond-with-distinct-call").values()];
    const b = ran.before;
    expect(b.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant", "toolResult", "assistant"]);
    expect(ran.after).toStrictEqual([b[0], b[1], b[2], stub(b[3], "t1"), b[4], b[5], b[6], summaryMessage(ran)]);
    expect((await ran.query("t1")).outputs).toEqual([textOfResult(results[1])]);
    expect((await ran.query("bash_7")).code).toBe(1);
  });

  it("short results (one failed) sharing a key: raw, recorded once, nothing indexed", async () => {
    const ran = await runFixture("reused-id-same-millisecond-short-results");
    expect(ran.after).toStrictEqual(ran.before);
    expect(kinds(ran)).toEqual([CUSTOM_TYPES.diagnostic]);
    expect(diagnostics(ran)[0].kind).toBe("occurrence-collision");
  });

  it("string content: both results stay raw with their strings", async () => {
    const ran = await runFixture("reused-id-same-millisecond-string-content");
    expect(ran.after).toStrictEqual(ran.before);
    const strings = [...fixtureResults("reused-id-same-millisecond-string-content").values()].map((m) => m.content);
    expect(ran.after.filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).content)).toEqual(strings);
  });
});

describe("kind 1 with the key already indexed (by the extension, before the second result existed)", () => {
  it("says that the extension stubs both with that record; run indexes nothing more", async () => {
    const { dir, cleanup } = makeTempDir("shapes-indexed");
    temps.push(cleanup);
    const file = copyInto(dir, path.join(FIXTURES, "reused-id-same-millisecond-two-turns.jsonl"));
    const first = fixtureResults("reused-id-same-millisecond-two-turns").get("4daab9bc")!;
    const record = {
      toolCallId: "bash_23",
      toolName: "bash",
      args: { command: "cat src/stock/reserve.ts" },
      resultText: textOfResult(first),
      isError: false,
      turnIndex: 0,
      timestamp: 1778749926514,
      resultTimestamp: 1778749927514,
    };
    const index = {
      type: "custom",
      customType: CUSTOM_TYPES.index,
      data: { toolCalls: [record] },
      id: "aa000001",
      parentId: "5551fe37",
      timestamp: "2026-05-14T09:13:00.000Z",
    };
    appendFileSync(file, `${JSON.stringify(index)}\n`);
    const size = statSync(file).size;
    const run = await runCli(["run", file, "--json", "--quiet"], { CONDENSE_NOW: NOW });
    expect(run.code, run.stderr).toBe(0);
    const appended = readFileSync(file)
      .subarray(size)
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(appended.map((e) => e.data)).toEqual([
      {
        kind: "occurrence-collision",
        detail:
          "bash_23@1778749927514: 2 tool results share this occurrence key (entries 4daab9bc, 1d15186c); the index already holds this key, so the extension stubs every one of them with that record's output",
      },
    ]);
  });
});

describe("kind 2: a message between a tool call and its result", () => {
  it("fail-04: the swept result is not summarized; it is indexed and query returns it; the context does not change", async () => {
    const ran = await runFixture("custom-message-before-large-result");
    const result = fixtureResults("custom-message-before-large-result").get("f172365f")!;
    expect(ran.after).toStrictEqual(ran.before);
    expect(ran.before.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(kinds(ran)).toEqual([CUSTOM_TYPES.index, CUSTOM_TYPES.diagnostic]);
    expect(ran.appended[0].data).toEqual({
      toolCalls: [
        {
          toolCallId: "toolu_01Bd1",
          toolName: "bash",
          args: { command: "npm run build" },
          resultText: textOfResult(result),
          isError: false,
          turnIndex: -1,
          timestamp: 1778749927321,
          resultTimestamp: 1778749927321,
        },
      ],
      backfilled: true,
      refs: [{ shortId: "t1", toolCallId: "toolu_01Bd1", resultTimestamp: 1778749927321 }],
    });
    expect(diagnostics(ran)).toEqual([
      {
        kind: "orphan-sweep",
        detail:
          'removed 1 tool result(s) Pi would otherwise send: toolu_01Bd1 (its call was closed by a custom message "pi-notify" in between; pi-ai answers the call with "No result provided")',
      },
    ]);
    expect(ran.report.batches.summarized).toBe(0);
    expect(ran.report.recovered).toEqual([
      {
        ref: "t1",
        key: "toolu_01Bd1@1778749927321",
        storedAs: "toolu_01Bd1@1778749927321",
        entryId: "f172365f",
        removedBy:
          'the orphan sweep: toolu_01Bd1 (its call was closed by a custom message "pi-notify" in between; pi-ai answers the call with "No result provided")',
      },
    ]);
    for (const ref of ["t1", "toolu_01Bd1@1778749927321", "toolu_01Bd1"]) expect((await ran.query(ref)).outputs).toEqual([textOfResult(result)]);
  });

  it("kimi ids, two calls: the answered one is summarized, the one after the custom message is indexed for recovery", async () => {
    const ran = await runFixture("custom-message-between-calls-functions-ids");
    const results = [...fixtureResults("custom-message-between-calls-functions-ids").values()];
    const b = ran.before;
    expect(b.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
    expect(ran.after).toStrictEqual([b[0], b[1], stub(b[2], "t1"), b[3], b[4], summaryMessage(ran)]);
    expect((await ran.query("t1")).outputs).toEqual([textOfResult(results[0])]);
    expect((await ran.query("t2")).outputs).toEqual([textOfResult(results[1])]);
    expect((await ran.query("t2")).keys).toEqual([`functions.bash:4@${results[1].timestamp}`]);
    const summary = ran.appended.find((e) => e.customType === CUSTOM_TYPES.summary)!;
    expect(summary.details.toolCallRefs.map((r: Loose) => r.shortId)).toEqual(["t1"]);
    expect(summary.content).not.toContain("functions.bash:4");
    expect(summary.content).not.toContain("npm test");
  });

  it("a short result: indexed for recovery although its batch would be trivial", async () => {
    const ran = await runFixture("custom-message-before-short-result");
    expect(ran.after).toStrictEqual(ran.before);
    expect(kinds(ran)).toEqual([CUSTOM_TYPES.index, CUSTOM_TYPES.diagnostic]);
    expect((await ran.query("t1")).outputs).toEqual(["0 problems"]);
  });

  it("a huge swept result goes to a sidecar and comes back whole", async () => {
    const ran = await runFixture("custom-message-before-huge-result");
    const text = textOfResult([...fixtureResults("custom-message-before-huge-result").values()][0]);
    expect(text.length).toBeGreaterThanOrEqual(70000);
    expect(ran.after).toStrictEqual(ran.before);
    const record = ran.appended[0].data.toolCalls[0];
    expect(record.resultText).toBe("");
    expect(record.spillBytes).toBe(Buffer.byteLength(text));
    expect(existsSync(record.spillPath)).toBe(true);
    expect(readFileSync(record.spillPath, "utf8")).toBe(text);
    expect((await ran.query("t1")).outputs).toEqual([text]);
  });

  it("a swept failed write keeps its purged arguments: the record is stored under id#1, which no stub looks up", async () => {
    const ran = await runFixture("custom-message-before-failed-write");
    const result = [...fixtureResults("custom-message-before-failed-write").values()][0];
    expect(ran.after).toStrictEqual(ran.before);
    expect((ran.after[1] as Loose).content[0].arguments).toEqual({ _purged: expect.stringMatching(/^<purged-errored-args size="\d+"\/>$/) });
    expect(ran.report.recovered.map((r: Loose) => [r.ref, r.storedAs])).toEqual([["t1", `toolu_01Wr#1@${result.timestamp}`]]);
    // The ref, the raw id and the result's own key all find it.
    for (const ref of ["t1", "toolu_01Wr", `toolu_01Wr@${result.timestamp}`]) {
      expect(await ran.query(ref), ref).toEqual({ code: 0, outputs: [textOfResult(result)], keys: [`toolu_01Wr#1@${result.timestamp}`] });
    }
    expect((await ran.query(`toolu_01Wr@${result.timestamp + 1}`)).code).toBe(1);
  });

  it("string content: recovered as the string", async () => {
    const ran = await runFixture("custom-message-before-string-content-result");
    const result = [...fixtureResults("custom-message-before-string-content-result").values()][0];
    expect(typeof result.content).toBe("string");
    expect(ran.after).toStrictEqual(ran.before);
    expect((await ran.query("t1")).outputs).toEqual([result.content]);
  });
});

describe("kind 3: one assistant message calls the same id twice", () => {
  it("fail-05 (functions.read:0): results pair with calls in order; the first is summarized, the second indexed; both recoverable", async () => {
    const ran = await runFixture("duplicate-ids-one-message-kimi");
    const results = fixtureResults("duplicate-ids-one-message-kimi");
    const first = results.get("18135479")!;
    const second = results.get("8aa9bbc6")!;
    expect(textOfResult(second).length).toBe(2247);
    const b = ran.before;
    expect(b.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(ran.after).toStrictEqual([b[0], b[1], stub(b[2], "t1"), b[3], summaryMessage(ran)]);
    expect(kinds(ran)).toEqual([
      CUSTOM_TYPES.summary,
      CUSTOM_TYPES.index,
      CUSTOM_TYPES.index,
      CUSTOM_TYPES.frontier,
      CUSTOM_TYPES.stats,
      CUSTOM_TYPES.flushMetrics,
      CUSTOM_TYPES.diagnostic,
    ]);
    expect(ran.appended[1].data.toolCalls.map((r: Loose) => [r.toolCallId, r.args.path, r.resultTimestamp])).toEqual([
      ["functions.read:0", "tsconfig.json", 1778749927314],
    ]);
    expect(ran.appended[2].data.toolCalls.map((r: Loose) => [r.toolCallId, r.args.path, r.resultTimestamp])).toEqual([
      ["functions.read:0", "package.json", 1778749928121],
    ]);
    expect((await ran.query("t1")).outputs).toEqual([textOfResult(first)]);
    expect((await ran.query("t2")).outputs).toEqual([textOfResult(second)]);
    expect((await ran.query("functions.read:0@1778749928121")).outputs).toEqual([textOfResult(second)]);
    const all = await ran.query("functions.read:0");
    expect(all.keys).toEqual(["functions.read:0@1778749927314", "functions.read:0@1778749928121"]);
    expect(all.outputs).toEqual([textOfResult(first), textOfResult(second)]);
    expect(diagnostics(ran)).toEqual([
      {
        kind: "orphan-sweep",
        detail:
          "removed 1 tool result(s) Pi would otherwise send: functions.read:0 (a second result for that id, which the assistant message calls 2 times; the sweep keeps only the first)",
      },
    ]);
  });

  it("three calls with one id: t1 summarized, t2 and t3 recovered, each its own text", async () => {
    const ran = await runFixture("duplicate-ids-one-message-three-calls");
    const results = [...fixtureResults("duplicate-ids-one-message-three-calls").values()];
    const b = ran.before;
    expect(ran.after).toStrictEqual([b[0], b[1], stub(b[2], "t1"), b[3], summaryMessage(ran)]);
    for (const [i, ref] of ["t1", "t2", "t3"].entries()) expect((await ran.query(ref)).outputs).toEqual([textOfResult(results[i])]);
    expect(diagnostics(ran)[0].detail).toBe(
      "removed 2 tool result(s) Pi would otherwise send: functions.read:0 (a second result for that id, which the assistant message calls 3 times; the sweep keeps only the first); functions.read:0 (a second result for that id, which the assistant message calls 3 times; the sweep keeps only the first)",
    );
  });

  it("the two results also share a millisecond: the first stays raw, the second is indexed as call_0#2", async () => {
    const ran = await runFixture("duplicate-ids-one-message-same-millisecond");
    const results = [...fixtureResults("duplicate-ids-one-message-same-millisecond").values()];
    expect(ran.after).toStrictEqual(ran.before);
    expect(ran.report.recovered.map((r: Loose) => [r.ref, r.storedAs])).toEqual([["t1", `call_0#2@${results[1].timestamp}`]]);
    expect((await ran.query("t1")).outputs).toEqual([textOfResult(results[1])]);
    // The key both results share, and the raw id, find the one stored (README: every occurrence).
    for (const ref of [`call_0@${results[1].timestamp}`, "call_0"]) {
      expect(await ran.query(ref), ref).toEqual({ code: 0, outputs: [textOfResult(results[1])], keys: [`call_0#2@${results[1].timestamp}`] });
    }
    expect(
      diagnostics(ran)
        .map((d) => d.kind)
        .sort(),
    ).toEqual(["occurrence-collision", "orphan-sweep"]);
  });

  it("short results: the first stays raw (trivial batch), the second is indexed", async () => {
    const ran = await runFixture("duplicate-ids-one-message-short-results");
    expect(ran.after).toStrictEqual(ran.before);
    expect(ran.report.batches.skippedTrivial).toBe(1);
    expect((await ran.query("t1")).outputs).toEqual(["10.8.2"]);
  });

  it("string content: both texts recovered", async () => {
    const ran = await runFixture("duplicate-ids-one-message-string-content");
    const results = [...fixtureResults("duplicate-ids-one-message-string-content").values()];
    const b = ran.before;
    expect(ran.after).toStrictEqual([b[0], b[1], stub(b[2], "t1"), b[3], summaryMessage(ran)]);
    expect((await ran.query("t1")).outputs).toEqual([results[0].content]);
    expect((await ran.query("t2")).outputs).toEqual([results[1].content]);
  });
});

describe("run never makes the context larger", () => {
  it("twelve short outputs in one batch: the stubs and summary would outweigh them, so nothing is written and the report says why", async () => {
    const ran = await runFixture("many-short-outputs-one-batch");
    expect(ran.appended).toEqual([]);
    expect(ran.after).toStrictEqual(ran.before);
    expect(ran.report.written).toBeNull();
    const from = ran.report.context.before.chars;
    expect(ran.report.withheld.reason).toMatch(
      new RegExp(
        `^the rendered context would grow from ${from.toLocaleString("en-US")} to [\\d,]+ chars \\(12 summarized call\\(s\\): [\\d,]+ summary chars for 1,660 raw chars; 0 compressed chain\\(s\\)\\); summaries and chains were not written$`,
      ),
    );
    expect(ran.report.withheld.context.chars).toBeGreaterThan(from);
  });
});

describe("images of summarized results", () => {
  it("metrics counts only images still sent; query says where they are and --save-images writes them", async () => {
    const { dir, cleanup } = makeTempDir("images");
    temps.push(cleanup);
    const file = copyInto(dir, path.join(FIXTURES, "image-in-summarized-result.jsonl"));
    const images = async () => JSON.parse((await runCli(["metrics", file, "--json"])).stdout).sessions[0].diagnostics.images.count;
    expect(await images()).toBe(1);
    expect((await runCli(["run", file, "--quiet"], { CONDENSE_NOW: NOW })).code).toBe(0);
    expect(await images()).toBe(0);
    const text = await runCli(["query", "t1", "--session", file]);
    expect(text.stdout).toContain(
      "Image: image/png, 70 bytes, not in the text below: entry 1bb09a92 (line 4), content block 1; write it with --save-images DIR",
    );
    const out = path.join(dir, "img");
    const saved = JSON.parse((await runCli(["query", "t1", "--session", file, "--json", "--save-images", out])).stdout).results[0];
    const result = [...fixtureResults("image-in-summarized-result").values()][0];
    const png = path.join(out, `toolu_01Ss_${result.timestamp}-1.png`);
    expect(saved.images).toEqual([{ entryId: "1bb09a92", line: 4, block: 1, mimeType: "image/png", bytes: 70, savedTo: png }]);
    const block = result.content[1];
    expect(readFileSync(png).equals(Buffer.from(block.data, "base64"))).toBe(true);
  });
});
