/**
 * `extendContext` (context/projection.ts): the projection of a branch from the projection of its
 * first entries is exactly `projectContext` of the whole branch — with appended summaries, appended
 * context edits (of earlier and of appended entries) and an appended compaction — and shares the
 * base's items where nothing changed (what `run` saves by not projecting the branch three times).
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { extendContext, projectContext } from "../src/context/projection.js";
import { contextOccurrences } from "../src/prune/occurrences.js";
import { loadSession } from "../src/session/session.js";
import type { SessionEntry } from "../src/session/types.js";
import { SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();

/** A linear branch: user, assistant with a tool call, its result, assistant text — `turns` times. */
function branchOf(turns: number): SessionEntry[] {
  const out: SessionEntry[] = [];
  let parentId: string | null = null;
  const push = (e: Record<string, unknown>) => {
    const entry = { id: `e${out.length}`, parentId, timestamp: at(out.length), ...e } as SessionEntry;
    parentId = entry.id;
    out.push(entry);
  };
  for (let t = 0; t < turns; t++) {
    push({ type: "message", message: { role: "user", content: `question ${t}`, timestamp: 1000 * t } });
    push({
      type: "message",
      message: { role: "assistant", content: [{ type: "toolCall", id: `c${t}`, name: "bash", arguments: { command: `ls ${t}` } }], timestamp: 1000 * t + 1 },
    });
    push({
      type: "message",
      message: { role: "toolResult", toolCallId: `c${t}`, toolName: "bash", content: [{ type: "text", text: `out ${t}` }], timestamp: 1000 * t + 2 },
    });
    push({ type: "message", message: { role: "assistant", content: [{ type: "text", text: `answer ${t}` }], timestamp: 1000 * t + 3 } });
  }
  return out;
}

function appendTo(branch: SessionEntry[], extra: Record<string, unknown>[]): SessionEntry[] {
  const out = [...branch];
  for (const e of extra) out.push({ id: `x${out.length}`, parentId: out[out.length - 1]?.id ?? null, timestamp: at(out.length), ...e } as SessionEntry);
  return out;
}

describe("extendContext", () => {
  it("equals projectContext of the whole branch: summaries, edits of earlier and appended entries, later edits winning", () => {
    const base = branchOf(4);
    const branch = appendTo(base, [
      { type: "custom_message", customType: "context-prune-summary", content: "summary of turn 1", display: false, details: { n: 1 } },
      { type: "custom", customType: "context-prune-index", data: { records: [] } },
      { type: "context_edit", targetId: "e2", replacement: { content: "[stub]" } },
      { type: "context_edit", targetId: "e5", replacement: null },
      { type: "context_edit", targetId: "e2", replacement: { content: "[later stub]" } },
      { type: "context_edit", targetId: "x16", replacement: { content: "edited summary" } },
    ]);
    const whole = projectContext(branch);
    const extended = extendContext(projectContext(base), branch, base.length);
    expect(extended).toEqual(whole);
    const texts = extended.items.map((i) => JSON.stringify((i.message as { content?: unknown }).content));
    expect(texts).toContain(JSON.stringify([{ type: "text", text: "[later stub]" }]));
    expect(texts).toContain('"edited summary"');
    expect(extended.items.some((i) => i.entry.id === "e5")).toBe(false);
  });

  it("shares the base's items and messages for entries no appended edit targets", () => {
    const base = branchOf(3);
    const baseContext = projectContext(base);
    const branch = appendTo(base, [{ type: "context_edit", targetId: "e6", replacement: { content: "[stub]" } }]);
    const extended = extendContext(baseContext, branch, base.length);
    expect(extended.items[0]).toBe(baseContext.items[0]);
    const edited = extended.items.findIndex((i) => i.entry.id === "e6");
    expect(extended.items[edited]).not.toBe(baseContext.items[edited]);
    expect(extended.items[edited + 1]).toBe(baseContext.items[edited + 1]);
    expect(extendContext(baseContext, base, base.length)).toBe(baseContext);
  });

  it("projects the whole branch again when a compaction is appended", () => {
    const base = branchOf(3);
    const branch = appendTo(base, [{ type: "compaction", summary: "earlier work", firstKeptEntryId: "e8", tokensBefore: 100 }]);
    const extended = extendContext(projectContext(base), branch, base.length);
    expect(extended).toEqual(projectContext(branch));
    expect(extended.items[0].message.role).toBe("compactionSummary");
    expect(extended.items.length).toBe(5);
  });

  it.each(sharedSessionFiles())("equals projectContext on the shared session %s, split anywhere", async (name) => {
    const { branch } = await loadSession(path.join(SHARED_SESSIONS, name));
    for (const k of [0, 1, branch.length >> 2, branch.length >> 1, branch.length - 1]) {
      if (k < 0) continue;
      expect(extendContext(projectContext(branch.slice(0, k)), branch, k)).toEqual(projectContext(branch));
    }
  });
});

describe("contextOccurrences with a base", () => {
  it("shares the base's reading when only messages without results follow it, and reads again otherwise", () => {
    const base = branchOf(3);
    const baseContext = projectContext(base);
    const baseItems = baseContext.items;
    const known = contextOccurrences(baseItems);
    expect(known.results.map((r) => r.entry.id)).toEqual(["e2", "e6", "e10"]);
    const summary = { type: "custom_message", customType: "context-prune-summary", content: "summary", display: false, details: {} };
    const withSummary = extendContext(baseContext, appendTo(base, [summary]), base.length).items;
    expect(contextOccurrences(withSummary, baseItems)).toBe(known);
    expect(contextOccurrences(withSummary, baseItems)).toEqual(contextOccurrences([...withSummary]));
    // A further turn brings a result: read again (and the same as reading from scratch).
    const more = appendTo(base, [
      summary,
      { type: "message", message: { role: "assistant", content: [{ type: "toolCall", id: "c9", name: "bash", arguments: {} }], timestamp: 9001 } },
      { type: "message", message: { role: "toolResult", toolCallId: "c9", toolName: "bash", content: [], timestamp: 9002 } },
    ]);
    const withTurn = extendContext(baseContext, more, base.length).items;
    const read = contextOccurrences(withTurn, baseItems);
    expect(read).not.toBe(known);
    expect(read.results.map((r) => r.entry.id)).toEqual(["e2", "e6", "e10", "x14"]);
    // Other item objects (a projection of its own): read again.
    expect(contextOccurrences(projectContext(appendTo(base, [summary])).items, baseItems)).not.toBe(known);
  });
});
