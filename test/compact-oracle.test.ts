/**
 * Oracle test for `condense compact`'s preparation: on every shared session, failure sample and
 * fixture that Pi 1.6 can open, and for several `keepRecentTokens`, our `prepareCompaction` must
 * equal Pi's own (`prepareCompaction` from pi-coding-agent `dist/core/compaction/compaction.js`,
 * on `SessionManager.open(copy).getBranch()`): the same first kept entry, split-turn flag, messages
 * to summarize and turn prefix (message for message), previous summary, `tokensBefore` and file
 * lists. Pi rewrites v1/v2 files with random ids on open, so for those the first kept entry is
 * compared by its position on the branch.
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { estimateMessageTokens } from "../src/compact/estimate.js";
import { computeFileLists } from "../src/compact/file-ops.js";
import { projectEntries } from "../src/context/projection.js";
import { prepareCompaction } from "../src/compact/prepare.js";
import { DEFAULT_COMPACTION_SETTINGS } from "../src/compact/settings.js";
import { openSession } from "../src/session/open.js";
import { copyInto, FIXTURES, importPiCompaction, importPiCompactionUtils, importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

const FAILURES = path.resolve(SHARED_SESSIONS, "../failures");
const list = (dir: string) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(".jsonl"))
        .sort()
        .map((f) => path.join(dir, f))
    : [];

/**
 * Files left out, each with the reason: condense refuses to write to them (so `compact` never
 * prepares them), and Pi either cannot open them or crashes or hangs on them.
 */
const NOT_WRITABLE = new Set([
  "gjc-01-youtube-transcript-extraction.v3.jsonl", // no header: Pi cannot open it
  "bad-bom.jsonl",
  "bad-empty.jsonl",
  "bad-glued-objects.jsonl",
  "bad-no-header.jsonl",
  "bad-not-jsonl.jsonl",
  "bad-null-message.jsonl", // Pi's getSessionContextSettings throws on it
  "bad-number-before-header.jsonl",
  "bad-parent-cycle.jsonl", // Pi's getBranch never ends
  "bad-truncated-final-line.jsonl",
]);

const files = [...list(SHARED_SESSIONS), ...list(FAILURES), ...list(FIXTURES)].filter((f) => !NOT_WRITABLE.has(path.basename(f)));

describe("compact: Pi's token estimate of every message", () => {
  it("equals Pi's estimateTokens on every projected message of every file (the cut point adds them up)", async () => {
    const PiCompaction = await importPiCompaction();
    let messages = 0;
    for (const file of files) {
      const session = await openSession(file, "read");
      for (const { messages: list } of projectEntries(session.branch)) {
        for (const m of list) {
          expect(estimateMessageTokens(m), `${path.basename(file)}: ${m.role} at ${m.timestamp}`).toBe(PiCompaction.estimateTokens(m));
          messages++;
        }
      }
    }
    expect(messages).toBeGreaterThan(5000);
  });
});
const KEEP = [20000, 5000, 1000, 200, 40, 0];

describe("compact: our preparation equals Pi 1.6's prepareCompaction", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiCompaction: any;
  let PiUtils: any;
  beforeAll(async () => {
    tmp = makeTempDir("compact-oracle");
    Pi = await importPiSessionManager();
    PiCompaction = await importPiCompaction();
    PiUtils = await importPiCompactionUtils();
  });
  afterAll(() => tmp?.cleanup());

  it("covers the shared sessions and the fixtures", () => {
    expect(files.filter((f) => f.startsWith(SHARED_SESSIONS)).length).toBeGreaterThanOrEqual(18);
    expect(files.filter((f) => f.startsWith(FIXTURES)).length).toBeGreaterThanOrEqual(30);
  });

  for (const file of files) {
    const name = path.relative(path.resolve(SHARED_SESSIONS, ".."), file);
    it(name, async () => {
      const ours = await openSession(file, "write").catch(async (e) => {
        // v1/v2 files are refused for writing without --migrate; their in-memory migration is what compact --migrate prepares.
        if (!/v[12] session/.test(String(e.message))) throw e;
        return openSession(file, "read");
      });
      const sm = Pi.SessionManager.open(copyInto(tmp.dir, file, `${path.basename(path.dirname(file))}-${path.basename(file)}`));
      const piBranch = sm.getBranch();
      expect(ours.branch.length).toBe(piBranch.length);
      const sameIds = ours.fileVersion === 3;
      let compared = 0;
      for (const keepRecentTokens of KEEP) {
        const settings = { ...DEFAULT_COMPACTION_SETTINGS, keepRecentTokens };
        const theirs = PiCompaction.prepareCompaction(piBranch, settings);
        const mine = prepareCompaction(ours.branch, settings);
        const label = `${name} keepRecentTokens=${keepRecentTokens}`;
        if (!theirs) {
          const leafIsCompaction = ours.branch[ours.branch.length - 1]?.type === "compaction";
          expect(mine, label).toBe(leafIsCompaction ? "Already compacted" : "Nothing to compact (session too small)");
          continue;
        }
        expect(typeof mine, label).toBe("object");
        if (typeof mine === "string") continue;
        compared++;
        const piKeptIndex = piBranch.findIndex((e: { id: string }) => e.id === theirs.firstKeptEntryId);
        const ourKeptIndex = ours.branch.findIndex((e) => e.id === mine.firstKeptEntryId);
        expect(ourKeptIndex, `${label}: first kept entry`).toBe(piKeptIndex);
        if (sameIds) expect(mine.firstKeptEntryId, label).toBe(theirs.firstKeptEntryId);
        expect(mine.isSplitTurn, `${label}: split turn`).toBe(theirs.isSplitTurn);
        expect(mine.tokensBefore, `${label}: tokensBefore`).toBe(theirs.tokensBefore);
        expect(mine.previousSummary, `${label}: previous summary`).toBe(theirs.previousSummary);
        expect(mine.messagesToSummarize.length, `${label}: messages to summarize`).toBe(theirs.messagesToSummarize.length);
        expect(mine.turnPrefixMessages.length, `${label}: turn prefix`).toBe(theirs.turnPrefixMessages.length);
        expect(mine.messagesToSummarize, label).toStrictEqual(theirs.messagesToSummarize);
        expect(mine.turnPrefixMessages, label).toStrictEqual(theirs.turnPrefixMessages);
        expect(computeFileLists(mine.fileOps), `${label}: file lists`).toStrictEqual(PiUtils.computeFileLists(theirs.fileOps));
      }
      // Small fixtures hold fewer tokens than the larger budgets; each file is compared at least at the small ones.
      const compactable = ours.branch.some((e) => e.type === "message") && ours.branch[ours.branch.length - 1]?.type !== "compaction";
      if (compactable) expect(compared, name).toBeGreaterThan(0);
    });
  }
});
