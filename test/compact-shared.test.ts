/**
 * `condense compact` on every shared session and on the compaction fixtures, checked against Pi
 * 1.6 itself:
 * - `compact --dry-run --json` reports Pi's `prepareCompaction`: first kept entry, split turn,
 *   messages to summarize, turn prefix, `tokensBefore`, read and modified files;
 * - after `compact` (on a copy), Pi's `SessionManager` opens the file and its `buildSessionContext`
 *   is [system message replay,] the new summary, then exactly the messages of the kept entries;
 *   Pi's own estimate of that context is the `piEstimate.after` condense reported;
 * - the zero-model summary names at least 90% of the files Pi's file tracking lists (all of them,
 *   in fact: the file tags are Pi's);
 * - a second `compact` finds the session already compacted and leaves the bytes alone.
 * v1/v2 sessions are compacted with `--migrate` (as `run` takes them): in memory (`--dry-run`) and
 * to a v3 copy (`--output`).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyInto, fixture, runCli, SHARED_SESSIONS } from "./cli-capture.js";
import { importPiCompaction, importPiCompactionUtils, importPiSessionManager, makeTempDir } from "./helpers.js";

const NOT_OPENABLE = new Set(["gjc-01-youtube-transcript-extraction.v3.jsonl"]); // no header: neither Pi nor compact writes it
const shared = existsSync(SHARED_SESSIONS)
  ? readdirSync(SHARED_SESSIONS)
      .filter((f) => f.endsWith(".jsonl") && !NOT_OPENABLE.has(f))
      .sort()
      .map((f) => ({ file: path.join(SHARED_SESSIONS, f), keep: undefined as number | undefined }))
  : [];
const fixtures = [
  { file: fixture("compact-overflow-rescue.jsonl"), keep: undefined },
  { file: fixture("compact-after-compaction.jsonl"), keep: 500 },
  { file: fixture("compact-recovery-omission.jsonl"), keep: 0 },
  { file: fixture("example-session.jsonl"), keep: 400 },
];

/** Files named anywhere in a summary. */
function coverage(summary: string, files: string[]): number {
  if (files.length === 0) return 1;
  return files.filter((f) => summary.includes(f)).length / files.length;
}

describe("compact on every shared session and the compaction fixtures, against Pi 1.6", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiCompaction: any;
  let PiUtils: any;
  beforeAll(async () => {
    tmp = makeTempDir("compact-shared");
    Pi = await importPiSessionManager();
    PiCompaction = await importPiCompaction();
    PiUtils = await importPiCompactionUtils();
  });
  afterAll(() => tmp?.cleanup());
  const compactedNames: string[] = [];

  it("has the sessions", () => {
    expect(shared.length).toBe(18);
  });

  for (const { file, keep } of [...shared, ...fixtures]) {
    const name = path.basename(file);
    it(name, async () => {
      const keepArgs = keep === undefined ? [] : ["--keep-recent-tokens", String(keep)];
      const settings = { ...PiCompaction.DEFAULT_COMPACTION_SETTINGS, ...(keep === undefined ? {} : { keepRecentTokens: keep }) };
      const piCopy = copyInto(tmp.dir, file, `pi-${name}`);
      const sm = Pi.SessionManager.open(piCopy);
      const piBranch = sm.getBranch();
      const theirs = PiCompaction.prepareCompaction(piBranch, settings);

      const dry = await runCli("compact", file, "--dry-run", "--json", "--migrate", ...keepArgs);
      expect(dry.code, dry.stderr).toBe(0);
      const doc = JSON.parse(dry.stdout);
      expect(doc.schema).toBe("condense.compact/2");
      const r = doc.sessions[0];
      expect(r.dryRun).toBe(true);
      expect(r.written).toBeNull();
      if (!theirs) {
        expect(r.status).toBe(piBranch[piBranch.length - 1]?.type === "compaction" ? "already-compacted" : "nothing-to-compact");
        expect(r.entryId).toBeNull();
        return;
      }
      const v1 = name.endsWith(".v1.jsonl");
      const piKeptIndex = piBranch.findIndex((e: { id: string }) => e.id === theirs.firstKeptEntryId);
      if (!v1) expect(r.firstKeptEntryId).toBe(theirs.firstKeptEntryId);
      expect(r.isSplitTurn).toBe(theirs.isSplitTurn);
      expect(r.messagesToSummarize).toBe(theirs.messagesToSummarize.length);
      expect(r.turnPrefixMessages).toBe(theirs.turnPrefixMessages.length);
      expect(r.tokensBefore).toBe(theirs.tokensBefore);
      expect(r.previousSummary).toBe(theirs.previousSummary !== undefined);
      const lists = PiUtils.computeFileLists(theirs.fileOps);
      expect({ readFiles: r.readFiles, modifiedFiles: r.modifiedFiles }).toEqual(lists);
      expect(r.status).toBe("compacted");
      compactedNames.push(name);

      // Write it: in place for v3, to a v3 copy for v1.
      const target = copyInto(tmp.dir, file, `ours-${name}`);
      const before = readFileSync(target);
      const output = path.join(tmp.dir, `out-${name}`);
      const wrote = await runCli("compact", target, "--json", ...keepArgs, ...(v1 ? ["--migrate", "--output", output] : []));
      expect(wrote.code, wrote.stderr).toBe(0);
      const result = JSON.parse(wrote.stdout).sessions[0];
      const compacted = v1 ? output : target;
      expect(result.written).toBe(compacted);
      const after = readFileSync(compacted);
      if (!v1) {
        // Only bytes appended: the original is a prefix, one line more.
        expect(after.subarray(0, before.length).equals(before)).toBe(true);
        expect(after.length - before.length).toBe(result.bytesAppended);
      }
      const entry = JSON.parse(after.toString("utf8").trimEnd().split("\n").pop()!);
      expect(Object.keys(entry)).toEqual([
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromHook",
        ...(entry.systemMessage ? ["systemMessage"] : []),
      ]);
      expect(entry).toMatchObject({
        type: "compaction",
        firstKeptEntryId: result.firstKeptEntryId,
        tokensBefore: theirs.tokensBefore,
        fromHook: false,
        details: lists,
      });
      expect(coverage(entry.summary, [...lists.readFiles, ...lists.modifiedFiles])).toBeGreaterThanOrEqual(0.9);
      expect(entry.summary.length).toBeLessThan(20_000 + [...lists.readFiles, ...lists.modifiedFiles].join("\n").length);

      // Pi opens the result: summary first, then exactly the kept entries' messages.
      const reopened = Pi.SessionManager.open(copyInto(tmp.dir, compacted, `reopen-${name}`));
      expect(reopened.getLeafId()).toBe(entry.id);
      const context = reopened.buildSessionContext().messages;
      const head = entry.systemMessage ? 2 : 1;
      if (entry.systemMessage) expect(context[0]).toEqual(entry.systemMessage);
      expect(context[head - 1]).toEqual({
        role: "compactionSummary",
        summary: entry.summary,
        tokensBefore: theirs.tokensBefore,
        timestamp: Date.parse(entry.timestamp),
      });
      const projectedBefore = Pi.buildSessionProjection(piBranch, piBranch[piBranch.length - 1].id).entries;
      const keptIndex = projectedBefore.findIndex((e: any) => e.sourceEntry.id === theirs.firstKeptEntryId);
      expect(keptIndex).toBeGreaterThanOrEqual(0);
      const kept = projectedBefore.slice(keptIndex).flatMap((e: any) => e.messages.filter((m: any) => m.role !== "system"));
      expect(context.slice(head)).toEqual(kept);
      expect(piKeptIndex).toBeGreaterThanOrEqual(0);
      // condense's figure for Pi's trigger after is Pi's own estimate.
      const estimate = PiCompaction.estimateProjectedContextTokens(reopened.buildSessionProjection(), reopened.getBranch()).tokens;
      expect(result.piEstimate.after).toBe(estimate);
      expect(result.piEstimate.before).toBe(theirs.tokensBefore);
      // What Pi sends afterwards, in the measure every command reports: Pi's own per-message estimate
      // of its own context after the compaction (the excluded `!!command` reaches no provider).
      const sent = context.filter((m: any) => !(m.role === "bashExecution" && m.excludeFromContext));
      expect(result.context.after.tokens).toBeLessThanOrEqual(sent.reduce((t: number, m: any) => t + PiCompaction.estimateTokens(m), 0));

      // Compacting again: Pi's "Already compacted", nothing written.
      if (!v1) {
        const again = await runCli("compact", target, "--json", ...keepArgs);
        expect(again.code).toBe(0);
        expect(JSON.parse(again.stdout).sessions[0]).toMatchObject({
          status: "already-compacted",
          reason: "Already compacted",
          written: null,
          bytesAppended: 0,
        });
        expect(readFileSync(target).equals(after)).toBe(true);
      }
    });
  }

  it("compacted every session Pi's preparation accepts (12 shared sessions, 4 fixtures)", () => {
    expect(compactedNames.length).toBe(16);
    expect(compactedNames).toContain("pimono-large-session.v1.jsonl");
    expect(compactedNames).toContain("gjc-03-raddit-dashboard-pr.v3.jsonl"); // with a previous compaction
  });
});
