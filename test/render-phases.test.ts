/**
 * The render phases one by one (error purge, orphan sweep, the stub-replace re-checks), the
 * diagnostics and how `run` records them, and the transcript.
 */
import { readFileSync } from "node:fs";
import { Chalk } from "chalk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { isStubText, spilledStub, stubRef } from "../src/context/vocabulary.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { protectionTest } from "../src/prune/protect.js";
import { CUSTOM_TYPES, type ToolCallRecord } from "../src/entries/types.js";
import { dedupDiagnostics, unrecordedDiagnostics } from "../src/render/diagnostics.js";
import { purgeErroredArgs } from "../src/render/error-purge.js";
import { sweepOrphanToolResults } from "../src/render/orphan-sweep.js";
import { pruneMessages } from "../src/render/prune-messages.js";
import { renderBranch } from "../src/render/render.js";
import { formatTranscript } from "../src/render/transcript.js";
import { loadSession } from "../src/session/session.js";
import type { AgentMessage, AssistantMessage, SessionEntry, ToolResultMessage } from "../src/session/types.js";
import { copyTo, fixture, runCli, tempDir } from "./render-support.js";

const user = (text: string, timestamp: number): AgentMessage => ({ role: "user", content: text, timestamp });
const assistant = (calls: { id: string; name?: string; args?: Record<string, string> }[], timestamp: number, text?: string): AssistantMessage => ({
  role: "assistant",
  content: [
    ...(text ? [{ type: "text" as const, text }] : []),
    ...calls.map((c) => ({ type: "toolCall" as const, id: c.id, name: c.name ?? "bash", arguments: c.args ?? {} })),
  ],
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: calls.length > 0 ? "toolUse" : "stop",
  timestamp,
});
const result = (id: string, text: string, timestamp: number, isError = false, toolName = "bash"): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName,
  content: [{ type: "text", text }],
  isError,
  timestamp,
});
const big = { command: `cat > out.txt <<'EOF'\n${"x".repeat(600)}\nEOF` };
const bigChars = JSON.stringify(big).length;
const purgeOn = { enabled: true, cooldownTurns: 2, minArgChars: 500 };

describe("error purge", () => {
  it("keys failures by the bare id, as the extension does: a reused id's successful occurrence is purged too", () => {
    // pi-condense 2.9.1 src/error-purge.ts: erroredAtTurn is a Map by toolCallId, and every
    // toolCall block with that id is purged — what Pi sends, so what render must print.
    const messages: AgentMessage[] = [
      user("go", 1),
      assistant([{ id: "bash_23", args: big }], 2),
      result("bash_23", "ok", 3),
      assistant([{ id: "bash_23", args: big }], 4),
      result("bash_23", "exit 1", 5, true),
      assistant([], 6, "trying something else"),
      assistant([], 7, "done"),
    ];
    const out = purgeErroredArgs(messages, purgeOn);
    const purged = [{ type: "toolCall", id: "bash_23", name: "bash", arguments: { _purged: `<purged-errored-args size="${bigChars}"/>` } }];
    expect((out[1] as AssistantMessage).content).toEqual(purged);
    expect((out[3] as AssistantMessage).content).toEqual(purged);
    expect(out.filter((m, i) => m !== messages[i])).toHaveLength(2);
    expect(messages[3]).toStrictEqual(assistant([{ id: "bash_23", args: big }], 4)); // input not mutated
  });

  it("dates a reused id's failure by its latest failed result", () => {
    const messages: AgentMessage[] = [
      user("go", 1),
      assistant([{ id: "bash_23", args: big }], 2),
      result("bash_23", "exit 2", 3, true),
      assistant([], 4, "a"),
      assistant([], 5, "b"),
      assistant([{ id: "bash_23", args: big }], 6),
      result("bash_23", "exit 1", 7, true),
    ];
    // The first failure is 3 turns old, but the latest (the one the map keeps) only 0: nothing is purged.
    expect(purgeErroredArgs(messages, purgeOn)).toBe(messages);
  });

  it("counts age in assistant turns: cooldown 2 needs two assistant messages after the failing one", () => {
    const base: AgentMessage[] = [user("go", 1), assistant([{ id: "w1", args: big }], 2), result("w1", "EACCES", 3, true)];
    const oneTurn = [...base, assistant([], 4, "hm")];
    expect(purgeErroredArgs(oneTurn, purgeOn)).toBe(oneTurn);
    const twoTurns = [...oneTurn, user("?", 5), assistant([], 6, "ok")];
    expect(purgeErroredArgs(twoTurns, purgeOn)).not.toBe(twoTurns);
    expect(purgeErroredArgs(twoTurns, { ...purgeOn, cooldownTurns: 3 })).toBe(twoTurns);
  });

  it("leaves a failure that was stub-replaced alone (the stub is isError: false), and orphan failures purge nothing", () => {
    const messages: AgentMessage[] = [
      user("go", 1),
      assistant([{ id: "w1", args: big }], 2),
      result("w1", "[Summarized in pruner summary, ref `t1`. Use context_tree_query to retrieve full output.]", 3, false),
      user("more", 4),
      result("w9", "EACCES", 5, true),
      assistant([], 6, "a"),
      assistant([], 7, "b"),
    ];
    expect(purgeErroredArgs(messages, purgeOn)).toBe(messages);
  });
});

describe("orphan sweep", () => {
  it("returns the same array when every result answers an open call", () => {
    const messages: AgentMessage[] = [
      user("go", 1),
      assistant([{ id: "a" }, { id: "b" }], 2),
      result("a", "1", 3),
      result("b", "2", 4),
      assistant([], 5, "ok"),
    ];
    const swept = sweepOrphanToolResults(messages);
    expect(swept.messages).toBe(messages);
    expect(swept.sweptIds).toEqual([]);
  });

  it("treats every other message as a barrier and never lets an earlier turn vouch for a later result", () => {
    const barriers: AgentMessage[] = [
      user("interrupt", 3),
      { role: "custom", customType: "x", content: "note", timestamp: 3 },
      { role: "bashExecution", command: "ls", output: "", exitCode: 0, timestamp: 3 },
      { role: "bashExecution", command: "ls", output: "", exitCode: 0, excludeFromContext: true, timestamp: 3 },
      { role: "compactionSummary", summary: "s", tokensBefore: 1, timestamp: 3 },
      { role: "branchSummary", summary: "s", fromId: "x", timestamp: 3 },
    ];
    for (const barrier of barriers) {
      const messages: AgentMessage[] = [assistant([{ id: "a" }], 2), barrier, result("a", "late", 4)];
      expect(sweepOrphanToolResults(messages).messages).toEqual([messages[0], barrier]);
    }
    const reused: AgentMessage[] = [
      assistant([{ id: "bash_1" }], 1),
      result("bash_1", "1", 2),
      assistant([{ id: "bash_2" }], 3),
      result("bash_1", "again", 4),
      result("bash_2", "2", 5),
    ];
    const swept = sweepOrphanToolResults(reused);
    expect(swept.messages).toEqual([reused[0], reused[1], reused[2], reused[4]]);
    expect(swept.sweptIds).toEqual(["bash_1"]);
  });
});

describe("pruneMessages", () => {
  it("returns the input array itself when no phase changes anything", async () => {
    const session = await loadSession(fixture("reused-id-bash23"));
    const branch = session.branch.slice(0, 8); // the messages, before the pruner entries
    const projected = branch.filter((e) => e.type === "message").map((e) => e.message as AgentMessage);
    const config = defaultConfig();
    const result = pruneMessages(projected, { indexer: ToolCallIndexer.fromBranch(branch), config, isProtected: protectionTest(config) });
    expect(result.messages).toBe(projected);
    expect(result.phases.map((p) => p.phase)).toEqual(["stub-replace", "error-purge", "chain-range-prune", "orphan-sweep"]);
    expect(result.diagnostics).toEqual([]);
  });

  it("re-checks protection at render time: a record protected now is left raw", async () => {
    const session = await loadSession(fixture("reused-id-bash23"));
    const config = defaultConfig();
    config.protectedTools = ["bash"];
    const rendered = renderBranch(session.branch, config);
    expect(rendered.after).toStrictEqual(rendered.before);
  });

  it("keeps context_tree_query results raw inside the recovery grace window (3 user turns by default)", () => {
    const q = (t: number) => result("q1", "recovered output", t, false, "context_tree_query");
    const record: ToolCallRecord = {
      toolCallId: "q1",
      toolName: "context_tree_query",
      args: { toolCallIds: ["t1"] },
      resultText: "recovered output",
      isError: false,
      turnIndex: 0,
      timestamp: 2,
      resultTimestamp: 3,
    };
    const indexer = new ToolCallIndexer();
    indexer.addRecord(record, true);
    indexer.registerRefs([{ shortId: "t2", toolCallId: "q1", resultTimestamp: 3 }]);
    const config = defaultConfig();
    const ctx = { indexer, config, isProtected: protectionTest(config) };
    const head: AgentMessage[] = [user("u1", 1), assistant([{ id: "q1", name: "context_tree_query" }], 2), q(3), assistant([], 4, "ok")];
    let messages = head;
    for (let k = 2; k <= 4; k++) {
      messages = [...messages, user(`u${k}`, 10 * k)];
      expect(pruneMessages(messages, ctx).messages, `after ${k - 1} newer user message(s)`).toBe(messages);
    }
    messages = [...messages, user("u5", 50)];
    const out = pruneMessages(messages, ctx).messages;
    expect((out[2] as ToolResultMessage).content).toEqual([
      { type: "text", text: "[Summarized in pruner summary, ref `t2`. Use context_tree_query to retrieve full output.]" },
    ]);
  });
});

describe("diagnostics", () => {
  it("are deduplicated per kind and key", () => {
    const d = (kind: "orphan-sweep" | "unresolved-range", dedupKey: string, detail: string) => ({ kind, dedupKey, detail });
    expect(
      dedupDiagnostics([d("orphan-sweep", "k1", "a"), d("unresolved-range", "k1", "b"), d("orphan-sweep", "k1", "c"), d("orphan-sweep", "k2", "d")]),
    ).toEqual([d("orphan-sweep", "k1", "a"), d("unresolved-range", "k1", "b"), d("orphan-sweep", "k2", "d")]);
  });

  it("already recorded on the branch are not recorded again", () => {
    const branch = [
      { type: "custom", customType: CUSTOM_TYPES.diagnostic, data: { kind: "orphan-sweep", detail: "a" }, id: "00000001", parentId: null, timestamp: "" },
    ] as SessionEntry[];
    expect(
      unrecordedDiagnostics(branch, [
        { kind: "orphan-sweep", detail: "a", dedupKey: "k" },
        { kind: "orphan-sweep", detail: "b", dedupKey: "k2" },
      ]),
    ).toEqual([{ kind: "orphan-sweep", detail: "b" }]);
  });

  describe("run records new ones once", () => {
    let tmp: ReturnType<typeof tempDir>;
    beforeEach(() => (tmp = tempDir("diag")));
    afterEach(() => tmp.cleanup());

    it("indexes the swept result for recovery, appends one context-prune-diagnostic entry last, chained to the entry before it; a second run appends nothing", async () => {
      const file = copyTo(tmp.dir, fixture("custom-message-between-call-and-result"));
      const original = readFileSync(file, "utf8");
      const env = { CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };
      expect((await runCli(["run", file, "--quiet"], env)).code).toBe(0);
      const once = readFileSync(file, "utf8");
      expect(once.startsWith(original)).toBe(true);
      const appended = once
        .slice(original.length)
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      // The swept result is never summarized (the model never sees it), only indexed so that query recovers it.
      expect(appended.map((e) => e.customType)).toEqual([CUSTOM_TYPES.index, CUSTOM_TYPES.diagnostic]);
      const at = 1767225603000;
      expect(appended[0].data).toEqual({
        toolCalls: [
          {
            toolCallId: "read_1",
            toolName: "read",
            args: { path: "config.json" },
            resultText: '{ "port": 8080 }',
            isError: false,
            turnIndex: -1,
            timestamp: at,
            resultTimestamp: at,
          },
        ],
        backfilled: true,
        refs: [{ shortId: "t1", toolCallId: "read_1", resultTimestamp: at }],
      });
      const diag = appended[1];
      expect(Object.keys(diag)).toEqual(["type", "customType", "data", "id", "parentId", "timestamp"]);
      expect(diag.data).toEqual({
        kind: "orphan-sweep",
        detail:
          'removed 1 tool result(s) Pi would otherwise send: read_1 (its call was closed by a custom message "file-watcher" in between; pi-ai answers the call with "No result provided")',
      });
      expect(diag.parentId).toBe(appended[0].id);
      expect(diag.timestamp).toBe("2026-02-01T00:00:00.000Z");
      expect((await runCli(["run", file, "--quiet"], env)).code).toBe(0);
      expect(readFileSync(file, "utf8")).toBe(once);
    });
  });
});

describe("transcript", () => {
  const plain = new Chalk({ level: 0 });

  it("shows role headers and tags stubs and pruner summaries", async () => {
    const session = await loadSession(fixture("reused-id-bash23"));
    const text = formatTranscript(renderBranch(session.branch, defaultConfig()).afterAgent, plain);
    expect(text).toBe(
      [
        "#1 user",
        "Run the tests.",
        "",
        "#2 assistant anthropic/claude-sonnet-4-5",
        "Running them.",
        '→ call bash bash_23 {"command":"npm test"}',
        "",
        "#3 toolResult bash bash_23 [stub t1]",
        "[Summarized in pruner summary, ref `t1`. Use context_tree_query to retrieve full output.]",
        "",
        "#4 assistant anthropic/claude-sonnet-4-5",
        "One test fails; I fixed the off-by-one in add().",
        "",
        "#5 user",
        "Run them again.",
        "",
        "#6 assistant anthropic/claude-sonnet-4-5",
        '→ call bash bash_23 {"command":"npm test"}',
        "",
        "#7 toolResult bash bash_23",
        "PASS src/app.test.ts",
        "Tests: 12 passed, 12 total",
        "",
        "",
        "#8 assistant anthropic/claude-sonnet-4-5",
        "All 12 tests pass now.",
        "",
        "#9 user [pruner summary]",
        "- `t1` bash `npm test` — 1 failed, 11 passed: adds numbers expected 3, received 4",
        "",
        "---",
        "Pruned tool outputs: `t1`",
        "Full original outputs: call `context_tree_query` with these refs (or run `condense query <ref>`).",
        "",
      ].join("\n"),
    );
  });

  it("tags a spilled stub with the ref on its last line, not one its preview mentions", () => {
    const record: ToolCallRecord = {
      toolCallId: "bash_9",
      toolName: "bash",
      args: {},
      resultText: "",
      isError: false,
      turnIndex: 0,
      timestamp: 1,
      resultTimestamp: 2,
      spillPath: "/s/bash_9_2.txt",
      spillBytes: 70000,
      resultPreview: "see ref `t99` above",
    };
    const text = spilledStub(record, "t4");
    expect(text).toBe(
      "[Oversized output spilled to file — 70000 bytes.]\nTool: bash\nPreview (head):\nsee ref `t99` above\n" +
        "Full output — read this file (offset/limit supported): /s/bash_9_2.txt\nOr use context_tree_query with ref `t4`.",
    );
    expect(isStubText(text)).toBe(true);
    expect(stubRef(text)).toBe("t4");
    expect(stubRef("[Summarized in pruner summary, ref `t7`. Use context_tree_query to retrieve full output.]")).toBe("t7");
    const transcript = formatTranscript([result("bash_9", text, 2)], plain);
    expect(transcript).toBe(`#1 toolResult bash bash_9 [stub t4]\n${text}\n`);
  });

  it("tags purged arguments, errors, custom messages and signed thinking", async () => {
    const purged = formatTranscript(renderBranch((await loadSession(fixture("failed-write-30kb-args"))).branch, defaultConfig()).afterAgent, plain);
    expect(purged).toContain(
      '#2 assistant anthropic/claude-sonnet-4-5\n→ call write write_1 [purged args] {"_purged":"<purged-errored-args size=\\"34124\\"/>"}\n',
    );
    expect(purged).toContain("#3 toolResult write write_1 error\nEACCES: permission denied, open 'src/gen.ts'\n");
    const custom = formatTranscript(
      renderBranch((await loadSession(fixture("custom-message-between-call-and-result"))).branch, defaultConfig()).afterAgent,
      plain,
    );
    expect(custom).toContain("#3 user (custom message file-watcher)\nconfig.json changed on disk while the tool ran.\n");
    const thinking = formatTranscript(
      renderBranch((await loadSession(fixture("signed-thinking-in-last-assistant"))).branch, defaultConfig()).afterAgent,
      plain,
    );
    expect(thinking).toContain(
      "#4 assistant anthropic/claude-sonnet-4-5\n[thinking, 45 chars, signed]\n  There are 120 files; now count lines.\n  Use wc.\nCounting lines next.\n",
    );
  });

  it("colors on a TTY only", async () => {
    const session = await loadSession(fixture("reused-id-bash23"));
    const colored = formatTranscript(renderBranch(session.branch, defaultConfig()).afterAgent, new Chalk({ level: 1 }));
    expect(colored).toContain("\u001b[");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the ANSI color codes chalk wrote
    expect(colored.replace(/\u001b\[[0-9;]*m/g, "")).toBe(formatTranscript(renderBranch(session.branch, defaultConfig()).afterAgent, plain));
  });
});
