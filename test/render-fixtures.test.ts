/**
 * Exact render output for each message shape that has broken real sessions (issue 4, "Must show"),
 * from hand-written fixtures in fixtures/ whose pruner entries (index, summary) are written by
 * hand where the shape needs them.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { defaultConfig, type PruneConfig } from "../src/config/config.js";
import { projectBranch } from "../src/context/projection.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { protectionTest } from "../src/prune/protect.js";
import { pruneMessages } from "../src/render/prune-messages.js";
import { renderBranch } from "../src/render/render.js";
import { loadSession } from "../src/session/session.js";
import type { Message, SessionEntry, ToolResultMessage } from "../src/session/types.js";
import { fixture, NO_RESULT, piTransform, providerFaults } from "./render-support.js";

const T = 1767225600000; // 2026-01-01T00:00:00.000Z, the fixtures' time base

const stub = (toolCallId: string, toolName: string, ref: string, timestamp: number): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName,
  content: [{ type: "text", text: `[Summarized in pruner summary, ref \`${ref}\`. Use context_tree_query to retrieve full output.]` }],
  isError: false,
  timestamp,
});

async function load(name: string, config: PruneConfig = defaultConfig()) {
  const session = await loadSession(fixture(name));
  const rendered = renderBranch(session.branch, config);
  return { session, rendered, before: rendered.before, after: rendered.after };
}

/** pruneMessages straight on the projection of `branch` (to see array identity). */
function prune(branch: SessionEntry[], config: PruneConfig = defaultConfig()) {
  const projected = projectBranch(branch).map((i) => i.message);
  const result = pruneMessages(projected, { indexer: ToolCallIndexer.fromBranch(branch), config, isProtected: protectionTest(config) });
  return { projected, result };
}

describe("a provider id reused in two turns (bash_23)", () => {
  it("stubs only the indexed occurrence; the later one stays raw", async () => {
    const { before, after, rendered } = await load("reused-id-bash23");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant", "toolResult", "assistant", "user"]);
    expect(after).toStrictEqual([
      before[0],
      before[1],
      stub("bash_23", "bash", "t1", T + 3000),
      before[3],
      before[4],
      before[5],
      before[6],
      before[7],
      before[8],
    ]);
    expect(after[6]).toBe(before[6]);
    expect((after[6] as ToolResultMessage).content).toEqual([{ type: "text", text: "PASS src/app.test.ts\nTests: 12 passed, 12 total\n" }]);
    expect(rendered.diagnostics).toEqual([]);
  });
});

describe("a custom message between a tool call and its result", () => {
  it("sweeps the separated result, reports it once, and pi-ai then answers the call with its 'No result provided' error", async () => {
    const { before, after, rendered } = await load("custom-message-between-call-and-result");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "user", "toolResult", "assistant"]);
    expect(before[2]).toStrictEqual({
      role: "user",
      content: [{ type: "text", text: "config.json changed on disk while the tool ran." }],
      timestamp: T + 2500,
    });
    expect(after).toStrictEqual([before[0], before[1], before[2], before[4]]);
    expect(rendered.diagnostics).toStrictEqual([
      {
        kind: "orphan-sweep",
        detail:
          'removed 1 tool result(s) Pi would otherwise send: read_1 (its call was closed by a custom message "file-watcher" in between; pi-ai answers the call with "No result provided")',
        dedupKey: "9c95df0a86875da9", // first 16 hex of sha1("read_1")
      },
    ]);
    const sent = piTransform(after);
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "user", "assistant"]);
    expect(sent[2]).toMatchObject({ role: "toolResult", toolCallId: "read_1", toolName: "read", isError: true, content: [{ type: "text", text: NO_RESULT }] });
    // Unpruned, pi-ai inserts the same error AND passes the real result on as an orphan.
    expect(providerFaults(before)).toEqual({ synthetic: 1, orphans: 1 });
    expect(providerFaults(after)).toEqual({ synthetic: 1, orphans: 0 });
  });
});

describe("a tool result with no call", () => {
  it("is removed; everything else is untouched", async () => {
    const { before, after, rendered } = await load("tool-result-without-call");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "user", "assistant", "toolResult", "assistant"]);
    expect((before[2] as ToolResultMessage).toolCallId).toBe("ghost_7");
    expect(after).toStrictEqual([before[0], before[1], before[3], before[4], before[5], before[6]]);
    expect(rendered.diagnostics.map((d) => d.detail)).toEqual([
      "removed 1 tool result(s) Pi would otherwise send: ghost_7 (no call with this id in the assistant message before it)",
    ]);
    expect(providerFaults(before)).toEqual({ synthetic: 0, orphans: 1 });
    expect(providerFaults(after)).toEqual({ synthetic: 0, orphans: 0 });
  });
});

describe("two tool calls with the same id in one assistant message", () => {
  it("keeps the first result for the id and sweeps the second", async () => {
    const { before, after, rendered } = await load("duplicate-call-id-in-one-message");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant"]);
    expect(after).toStrictEqual([before[0], before[1], before[2], before[4]]);
    expect((after[2] as ToolResultMessage).content).toEqual([{ type: "text", text: "contents of a" }]);
    expect(rendered.diagnostics.map((d) => d.detail)).toEqual([
      "removed 1 tool result(s) Pi would otherwise send: read_0 (a second result for that id, which the assistant message calls 2 times; the sweep keeps only the first)",
    ]);
    expect(providerFaults(after)).toEqual({ synthetic: 0, orphans: 0 });
  });
});

describe("two results with the same millisecond timestamp", () => {
  it("stubs each occurrence with its own ref (different ids, same time)", async () => {
    const { before, after } = await load("same-millisecond-results");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant", "user"]);
    expect(after).toStrictEqual([
      before[0],
      before[1],
      stub("toolu_01", "read", "t1", T + 3000),
      stub("toolu_02", "read", "t2", T + 3000),
      before[4],
      before[5],
    ]);
  });
});

describe("a failed write whose arguments hold 30 KB", () => {
  const purged = { _purged: '<purged-errored-args size="34124"/>' };

  it("is purged once the failure is 2 assistant turns old; the error result stays", async () => {
    const { before, after } = await load("failed-write-30kb-args");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]);
    const write = before[1] as Extract<Message, { role: "assistant" }>;
    expect(JSON.stringify((write.content[0] as { arguments: unknown }).arguments).length).toBe(34124);
    expect(after).toStrictEqual([
      before[0],
      { ...write, content: [{ type: "toolCall", id: "write_1", name: "write", arguments: purged }] },
      before[2],
      before[3],
      before[4],
      before[5],
    ]);
    expect(JSON.stringify(after[1])).toContain('"arguments":{"_purged":"<purged-errored-args size=\\"34124\\"/>"}');
    expect((after[2] as ToolResultMessage).isError).toBe(true);
    expect(JSON.stringify(after).length).toBe(JSON.stringify(before).length - 34124 + JSON.stringify(purged).length);
  });

  it("is not purged before the cooldown (1 assistant turn old): the very same array comes back", async () => {
    const session = await loadSession(fixture("failed-write-30kb-args"));
    const upToSecondResult = session.branch.slice(0, 5);
    const { projected, result } = prune(upToSecondResult);
    expect(projected.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "toolResult"]);
    expect(result.messages).toBe(projected);
    expect(result.phases.map((p) => p.messages)).toEqual([projected, projected, projected, projected]);
  });

  it("is not purged when disabled or when the arguments are below minArgChars", async () => {
    const session = await loadSession(fixture("failed-write-30kb-args"));
    const off = defaultConfig();
    off.purgeErrors.enabled = false;
    const big = defaultConfig();
    big.purgeErrors.minArgChars = 34125;
    for (const config of [off, big]) {
      const { projected, result } = prune(session.branch, config);
      expect(result.messages).toBe(projected);
    }
    const exact = defaultConfig();
    exact.purgeErrors.minArgChars = 34124;
    expect(prune(session.branch, exact).result.messages[1]).not.toBe(prune(session.branch, exact).projected[1]);
  });
});

describe("a thinking block with a signature in the last assistant message", () => {
  it("stays byte for byte while an earlier result is stubbed", async () => {
    const name = "signed-thinking-in-last-assistant";
    const { session, before, after, rendered } = await load(name);
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "toolResult", "user"]);
    expect(after).toStrictEqual([before[0], before[1], stub("bash_1", "bash", "t1", T + 3000), before[3], before[4], before[5]]);
    const lastAssistant = rendered.afterAgent[3];
    expect(lastAssistant).toBe((session.branch[3] as unknown as { message: unknown }).message);
    const rawLine = readFileSync(fixture(name), "utf8").split("\n")[4];
    const rawMessage = rawLine.slice(rawLine.indexOf('"message":') + '"message":'.length, -1);
    expect(JSON.stringify(after[3])).toBe(rawMessage);
    expect(rawMessage).toContain('"thinkingSignature":"EqQBCkgIBxABGAIiQEZm9vYmFy');
  });
});

describe("a legacy record without resultTimestamp next to an occurrence-keyed one with the same id", () => {
  it("fails closed: the first occurrence is not stubbed, the occurrence-keyed one is", async () => {
    const { before, after } = await load("legacy-and-occurrence-keyed-same-id");
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "user", "assistant", "toolResult", "assistant", "user"]);
    expect(after).toStrictEqual([
      before[0],
      before[1],
      before[2],
      before[3],
      before[4],
      before[5],
      before[6],
      stub("bash_23", "bash", "t2", T + 7000),
      before[8],
      before[9],
    ]);
    expect(after[2]).toBe(before[2]);
  });

  it("while only the legacy record exists, the bare id is used and the result is stubbed", async () => {
    const session = await loadSession(fixture("legacy-and-occurrence-keyed-same-id"));
    const legacyOnly = session.branch.slice(0, 6);
    const rendered = renderBranch(legacyOnly, defaultConfig());
    expect(rendered.after[2]).toStrictEqual(stub("bash_23", "bash", "t1", T + 3000));
  });
});
