/**
 * What one `run --target pi` appends, as a whole and in part:
 * - it reaches the fixed point: on the shapes where error purge keyed by the bare id moved between
 *   runs (two failed calls sharing an id, the later failure removed by the orphan sweep — after a
 *   notification between call and result, or as the second result of an id called twice in one
 *   message), the first run purges the earlier failed call's arguments and a second run appends
 *   nothing (the exact edits asserted);
 * - every prefix of its append is valid for providers: a Pi that reads the file while the append is
 *   torn (killed, full disk) never sends a tool result whose call is left out. Checked with Pi 1.6's
 *   own `buildSessionContext` and `convertToLlm`, cut after each appended entry.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";
import { FIXTURES, importPiMessages, importPiSessionManager, makeTempDir } from "./helpers.js";
import { unansweredResults } from "./native-mode/checks.js";

const NOW = "2026-02-01T00:00:00.000Z";
type Line = Record<string, any>;

const linesOf = (text: string): string[] => text.split("\n").filter((l) => l !== "");

describe("run --target pi", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;
  const env = () => ({ CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") });
  beforeAll(async () => {
    tmp = makeTempDir("native-append");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
  });
  afterAll(() => tmp?.cleanup());

  /** Copy a fixture, run it for stock Pi; the original lines and the appended entries. */
  const runFixture = async (name: string) => {
    const file = path.join(tmp.dir, name);
    copyFileSync(path.join(FIXTURES, name), file);
    const run = await runCli(["run", file, "--target", "pi", "--quiet"], env());
    expect(run.code, run.stderr).toBe(0);
    const original = linesOf(readFileSync(path.join(FIXTURES, name), "utf8"));
    const appended = linesOf(readFileSync(file, "utf8")).slice(original.length);
    return { file, original, appended, entries: new Map<string, Line>(original.map((l) => JSON.parse(l)).map((e) => [e.id, e])) };
  };
  const sent = (file: string): any[] => PiMessages.convertToLlm(Pi.SessionManager.open(file).buildSessionContext().messages);
  /** The assistant entry's content with the call at `block` purged as error purge writes it. */
  const purgedAt = (entry: Line, block: number) =>
    entry.message.content.map((b: Line, i: number) =>
      i === block ? { ...b, arguments: { _purged: `<purged-errored-args size="${JSON.stringify(b.arguments).length}"/>` } } : b,
    );

  describe("reaches its fixed point in one run (error purge per occurrence)", () => {
    const secondRunAppendsNothing = async (file: string) => {
      const bytes = readFileSync(file);
      const again = await runCli(["run", file, "--target", "pi", "--json", "--quiet"], env());
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).sessions[0].contextEdits.written).toBe(0);
      expect(readFileSync(file).equals(bytes), "a second run appends nothing").toBe(true);
    };

    it("reused id, the later failure after a notification: the earlier failed call is purged at once", async () => {
      const { file, appended, entries } = await runFixture("reused-id-failed-result-after-custom-message.jsonl");
      const edits = appended.map((l) => JSON.parse(l)).filter((e) => e.type === "context_edit");
      // 5187ac12 calls functions.bash:0 (failed, 3 turns old); a350e02f is the later failed result
      // for the same id, after the notification 298c59bd: the sweep removes it.
      expect(edits.map((e) => [e.targetId, e.replacement])).toEqual([
        ["5187ac12", { content: purgedAt(entries.get("5187ac12")!, 2) }],
        ["a350e02f", null],
      ]);
      expect(JSON.stringify(edits[0].replacement.content[2].arguments)).toBe('{"_purged":"<purged-errored-args size=\\"666\\"/>"}');
      // The later call keeps its (short) arguments; Pi alone sends the earlier call purged.
      const calls = sent(file)
        .filter((m) => m.role === "assistant")
        .flatMap((m) => m.content.filter((b: Line) => b.type === "toolCall").map((b: Line) => JSON.stringify(b.arguments)));
      expect(calls).toEqual(['{"_purged":"<purged-errored-args size=\\"666\\"/>"}', '{"command":"psql -f create.sql"}']);
      await secondRunAppendsNothing(file);
    });

    it("one message calls the id twice, its second result failed and swept: only the first message's failed call is purged", async () => {
      const { file, appended, entries } = await runFixture("duplicate-ids-one-message-second-failed.jsonl");
      const edits = appended.map((l) => JSON.parse(l)).filter((e) => e.type === "context_edit");
      expect(edits.map((e) => [e.targetId, e.replacement === null ? null : e.replacement.content[0].type])).toEqual([
        ["b98f8cc9", "thinking"], // the failed deploy --first: 2 turns old
        ["7c9dbba3", "text"], // the retry's output: a stub
        ["4a9f13dc", null], // the second result for the id: swept
      ]);
      expect(edits[0].replacement.content).toEqual(purgedAt(entries.get("b98f8cc9")!, 2));
      expect(edits[1].replacement.content[0].text).toMatch(/^\[Summarized in pruner summary, ref `t1`\. Full output: `condense query t1 --session /);
      // 24f1f103 (retry and again, both 1 turn old) is not edited: the failure that is 2 turns old
      // answers another call, which keyed by the bare id it would also have purged, on a second run.
      expect(edits.some((e) => e.targetId === "24f1f103")).toBe(false);
      await secondRunAppendsNothing(file);
    });
  });

  describe("every prefix of the append is valid for providers", () => {
    /** Tool results without their call, and the tool calls of each assistant message (by timestamp). */
    const shape = (messages: any[]) => ({
      unanswered: unansweredResults(messages).sort(),
      calls: messages
        .filter((m) => m.role === "assistant")
        .map((m) => `${m.timestamp}:${m.content.flatMap((b: Line) => (b.type === "toolCall" ? [b.id] : [])).join(",")}`),
      last: messages.filter((m) => m.role === "assistant").at(-1),
    });

    for (const name of [
      "compressed-chain-with-swept-result.jsonl",
      "native-mode-shapes.jsonl",
      "reused-id-failed-result-after-custom-message.jsonl",
      "duplicate-ids-one-message-second-failed.jsonl",
    ]) {
      it(`${name}: cut after each appended entry, Pi sends no result without its call`, async () => {
        const { original, appended } = await runFixture(name);
        expect(appended.some((l) => JSON.parse(l).type === "context_edit")).toBe(true);
        const prefix = path.join(tmp.dir, `prefix-${name}`);
        const cut = (k: number) => {
          writeFileSync(prefix, `${[...original, ...appended.slice(0, k)].join("\n")}\n`);
          return shape(sent(prefix));
        };
        const before = cut(0);
        const allCalls = new Set(before.calls);
        for (let k = 1; k <= appended.length; k++) {
          const now = cut(k);
          // Only results that were already unanswered before the run (and that the edits remove).
          const left = [...before.unanswered];
          const extra = now.unanswered.filter((id) => {
            const at = left.indexOf(id);
            if (at >= 0) left.splice(at, 1);
            return at < 0;
          });
          expect(extra, `after ${k} of ${appended.length} entries: results without their call`).toEqual([]);
          for (const c of now.calls) expect(allCalls.has(c), `after ${k} entries: the calls of ${c}`).toBe(true);
          expect(now.last, `after ${k} entries: the latest assistant message`).toStrictEqual(before.last);
        }
        expect(cut(appended.length).unanswered).toEqual([]);
      });
    }
  });
});
