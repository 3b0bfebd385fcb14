/**
 * Native mode over time (docs/design.md §11): after `run --target pi`, Pi 1.6 itself (its
 * SessionManager, by file path) appends new turns — five closed chains of two bash calls each —
 * and `run --target pi` runs again. The second run edits only new work and takes earlier work
 * further, never back: per target, condense's edits go raw → stub → omitted, an assistant message
 * never gets thinking or purged arguments back, a chain start keeps its block, and no user message
 * is ever omitted. A user's own later edit of a target (here: undoing a stub) is left alone, and
 * so is the rest of that tool turn. After each run Pi alone sends exactly `render --as pi-only`,
 * and a third run appends nothing.
 */
import { copyFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stubRef } from "../src/context/vocabulary.js";
import { CONTEXT_EDITS_TYPE } from "../src/entries/types.js";
import { runCli } from "./cli-harness.js";
import { SHARED_SESSIONS, importPiMessages, importPiSessionManager, makeTempDir } from "./helpers.js";
import { expectProviderValid, unansweredResults } from "./native-mode/checks.js";

const NOW1 = "2026-02-01T00:00:00.000Z";
const NOW2 = "2026-02-02T00:00:00.000Z";
const SOURCE = path.join(SHARED_SESSIONS, "kimchi-session.v3.jsonl");

type Entry = {
  type: string;
  id: string;
  targetId?: string;
  replacement?: { content: unknown } | null;
  customType?: string;
  data?: { editIds?: string[] };
  message?: { role: string; content?: unknown };
};

const entriesOf = (file: string): Entry[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(1)
    .map((l) => JSON.parse(l));

/** Condense's own context edits per target, in file order. */
function ownEditsByTarget(entries: Entry[]): Map<string, Entry[]> {
  const own = new Set(entries.filter((e) => e.type === "custom" && e.customType === CONTEXT_EDITS_TYPE).flatMap((e) => e.data?.editIds ?? []));
  const byTarget = new Map<string, Entry[]>();
  for (const e of entries) if (e.type === "context_edit" && own.has(e.id)) byTarget.set(e.targetId!, [...(byTarget.get(e.targetId!) ?? []), e]);
  return byTarget;
}

type Block = { type?: string; text?: string; arguments?: unknown };
const blocksOf = (r: Entry["replacement"]): Block[] => (r && Array.isArray(r.content) ? (r.content as Block[]) : []);
const isStub = (r: Entry["replacement"]) => /^\[(Summarized in pruner summary|Oversized output spilled)/.test(blocksOf(r)[0]?.text ?? "");
const purged = (r: Entry["replacement"]) => blocksOf(r).filter((b) => b.type === "toolCall" && JSON.stringify(b.arguments).includes("_purged")).length;

/** Assert that one target's sequence of condense's edits only ever prunes further. */
function expectMonotone(role: string, edits: Entry[]): void {
  if (role === "user")
    expect(
      edits.map((e) => e.replacement === null),
      "a user message is never omitted",
    ).not.toContain(true);
  for (let i = 1; i < edits.length; i++) {
    const [a, b] = [edits[i - 1].replacement, edits[i].replacement];
    expect(a, `${edits[i].targetId}: an omitted message never comes back`).not.toBeNull();
    if (b === null) continue;
    if (role === "toolResult") expect(isStub(a) && isStub(b), `${edits[i].targetId}: a stub stays a stub`).toBe(true);
    if (role === "assistant") {
      expect(blocksOf(b).filter((x) => x.type === "thinking").length).toBeLessThanOrEqual(blocksOf(a).filter((x) => x.type === "thinking").length);
      expect(purged(b)).toBeGreaterThanOrEqual(purged(a));
    }
    if (role === "user") expect(blocksOf(b)[0]?.text, `${edits[i].targetId}: the chain block stays first`).toBe(blocksOf(a)[0]?.text);
  }
}

describe("native mode after Pi appended turns", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;
  let file: string;
  const env = (now: string) => ({ CONDENSE_NOW: now, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") });
  const piAlone = (f: string) => PiMessages.convertToLlm(Pi.SessionManager.open(f).buildSessionContext().messages);
  const expectPiAloneRendered = async (f: string) => {
    const r = await runCli(["render", f, "--as", "pi-only", "--format", "json", "--quiet"], env(NOW2));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toStrictEqual(piAlone(f));
  };

  beforeAll(async () => {
    tmp = makeTempDir("native-later");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
    file = path.join(tmp.dir, "kimchi.jsonl");
    copyFileSync(SOURCE, file);
  });
  afterAll(() => tmp?.cleanup());

  let undone: string;

  it("run 1 writes edits; the user then undoes one stub with an edit of their own; Pi appends five closed chains", async () => {
    const first = await runCli(["run", file, "--target", "pi", "--json"], env(NOW1));
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).sessions[0].contextEdits).toMatchObject({ keptForeign: 0, unrepresentable: 0 });
    await expectPiAloneRendered(file);
    const entries = entriesOf(file);
    const byId = new Map(entries.map((e) => [e.id, e]));
    // The first stubbed result: the user restores its original content (a foreign edit after condense's).
    const stubbed = [...ownEditsByTarget(entries)].find(([target, edits]) => byId.get(target)?.message?.role === "toolResult" && isStub(edits[0].replacement));
    expect(stubbed).toBeDefined();
    undone = stubbed![0];
    const sm = Pi.SessionManager.open(file);
    sm.appendContextEdit(undone, { content: byId.get(undone)!.message!.content });
    const last = [...sm.getBranch()].reverse().find((e: Entry) => e.type === "message" && e.message?.role === "assistant").message;
    let t = 1_900_000_000_000;
    const assistant = (content: unknown[], stopReason: string) => ({ ...last, content, stopReason, timestamp: ++t });
    for (let k = 0; k < 5; k++) {
      sm.appendMessage({ role: "user", content: [{ type: "text", text: `next task ${k}` }], timestamp: ++t });
      for (let j = 0; j < 2; j++) {
        const id = `later_${k}_${j}`;
        sm.appendMessage(assistant([{ type: "toolCall", id, name: "bash", arguments: { command: `ls -R dir${k}` } }], "toolUse"));
        sm.appendMessage({
          role: "toolResult",
          toolCallId: id,
          toolName: "bash",
          content: [{ type: "text", text: `file${k}${j}\n`.repeat(400) }],
          isError: false,
          timestamp: ++t,
        });
      }
      sm.appendMessage(assistant([{ type: "text", text: `done ${k}` }], "stop"));
    }
    await expectPiAloneRendered(file);
  });

  it("run 2 edits only new work and takes earlier work further; the user's edit stands", async () => {
    const before = entriesOf(file);
    const sentBefore = piAlone(file);
    const second = await runCli(["run", file, "--target", "pi", "--json"], env(NOW2));
    expect(second.code, second.stderr).toBe(0);
    const report = JSON.parse(second.stdout).sessions[0];
    expect(report.contextEdits).toEqual({ written: 56, stubs: 6, assistants: 0, carriers: 5, omitted: 45, keptForeign: 2, unrepresentable: 0 });
    // The undone result, and the assistant message whose call it answers (a tool turn goes whole or not at all).
    expect(report.contextEdits.keptForeign).toBe(2);
    const after = entriesOf(file);
    const byId = new Map(after.map((e) => [e.id, e]));
    const appended = after.slice(before.length);
    // Nothing after the user's edit targets what they undid.
    expect(appended.filter((e) => e.type === "context_edit" && e.targetId === undone)).toEqual([]);
    // The new chains' results (Pi's later_* calls): one edit each, the four of the chains the window
    // now compresses omitted, the six of the newest summarized behind stubs t58–t63.
    const editsOf = (id: string) => appended.filter((e) => e.type === "context_edit" && e.targetId === id).map((e) => e.replacement);
    const later = before.filter(
      (e) => e.type === "message" && e.message?.role === "toolResult" && String((e.message as { toolCallId?: unknown }).toolCallId).startsWith("later_"),
    );
    expect(later).toHaveLength(10);
    expect(later.slice(0, 4).map((r) => editsOf(r.id))).toEqual([[null], [null], [null], [null]]);
    expect(later.slice(4).map((r) => editsOf(r.id).map((x) => stubRef((x as { content: { text: string }[] }).content[0].text)))).toEqual([
      ["t58"],
      ["t59"],
      ["t60"],
      ["t61"],
      ["t62"],
      ["t63"],
    ]);
    // Entries run 2 appended itself (its summaries) are edited too: the four a chain now covers are omitted.
    const existing = new Set(before.map((e) => e.id));
    const ownNew = appended.filter((e) => e.type === "context_edit" && !existing.has(e.targetId!));
    expect(ownNew.map((e) => [byId.get(e.targetId!)?.type, e.replacement])).toEqual(Array(4).fill(["custom_message", null]));
    // Old chains the window now passes were compressed: results stubbed in run 1 are omitted now.
    const twice = [...ownEditsByTarget(after)].filter(([, e]) => e.length > 1);
    expect(twice.length).toBe(8);
    for (const [target, edits] of ownEditsByTarget(after)) expectMonotone(byId.get(target)?.message?.role ?? byId.get(target)!.type, edits);
    await expectPiAloneRendered(file);
    const sent = piAlone(file);
    expect(unansweredResults(sent)).toEqual([]);
    expectProviderValid("run 2", sentBefore, sent);
    expect(JSON.stringify(sent)).toContain(JSON.stringify(byId.get(undone)!.message!.content));
  });

  it("run 3 appends nothing", async () => {
    const bytes = readFileSync(file);
    const third = await runCli(["run", file, "--target", "pi", "--quiet"], env(NOW2));
    expect(third.code, third.stderr).toBe(0);
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });
});
