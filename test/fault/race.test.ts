/**
 * Pi appending while condense writes (issue "Crash-proof", R): Pi 1.6's own SessionManager, loaded
 * by file path, holds the session in memory and appends by path — as a running Pi does — at the
 * worst moments: right before condense's one write, right after it, and after condense was killed
 * mid-write (torn), with Pi still running or reopening the file. After condense (or the next
 * condense command) settles the write: the original bytes are unchanged, Pi's entries are all
 * there and Pi's last entry is the leaf, and condense's bytes are gone unless Pi built on them.
 */
import { cpSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readUndoRecords } from "../../src/session/journal.js";
import { loadSession } from "../../src/session/session.js";
import { appendEntries, ConcurrentAppendError, chainEntries } from "../../src/session/writer.js";
import { runCli } from "../cli-capture.js";
import { importPiSessionManager, makeTempDir } from "../helpers.js";
import { buildForChildren, generateSession, leftovers, type PlannedWrite, planWrite, runProcess, sha256, tailIsWhole } from "./support.js";

const CHILD = path.join(__dirname, "commit-child.mjs");
const NOW = "2026-03-01T10:00:00.000Z";

let tmp: ReturnType<typeof makeTempDir>;
let build: ReturnType<typeof buildForChildren>;
let Pi: any;
let base: string;
let seq = 0;

beforeAll(async () => {
  tmp = makeTempDir("race");
  build = buildForChildren("race");
  Pi = await importPiSessionManager();
  base = path.join(tmp.dir, "base.jsonl");
  generateSession(base, 300_000);
}, 60_000);

afterAll(() => {
  tmp?.cleanup();
  build?.cleanup();
});

function freshCopy(): string {
  const file = path.join(tmp.dir, `s${++seq}.jsonl`);
  cpSync(base, file);
  return file;
}

const userMessage = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.parse(NOW) });

/** What a freshly started Pi sees (on a copy: Pi's loader may repair the file it opens). */
function piView(file: string): { leaf: string | null; branch: string[] } {
  const copy = `${file}.pi-view.jsonl`;
  cpSync(file, copy);
  const sm = Pi.SessionManager.open(copy);
  return { leaf: sm.getLeafId(), branch: sm.getBranch().map((e: { id: string }) => e.id) };
}

async function baseBranch(): Promise<string[]> {
  return piView(base).branch;
}

describe("Pi appends during condense's own write (in process)", () => {
  it("Pi's line lands right before condense's write: condense truncates its own bytes, Pi's entry stays the leaf", async () => {
    const file = freshCopy();
    const session = await loadSession(file);
    const pi = Pi.SessionManager.open(file);
    const entries = chainEntries(session, [{ type: "custom", customType: "pi-condense", data: { n: 1 } }], NOW);
    let piId = "";
    const error = await appendEntries(session, entries, {
      race: { beforeAppend: () => (piId = pi.appendMessage(userMessage("typed while condense ran"))) },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConcurrentAppendError);
    const ours = Buffer.byteLength(`${JSON.stringify(entries[0])}\n`);
    expect((error as Error).message).toContain(`condense removed its own ${ours} bytes`);
    const bytes = readFileSync(file);
    expect(sha256(bytes.subarray(0, session.size))).toBe(sha256(readFileSync(base)));
    expect(JSON.parse(bytes.subarray(session.size).toString()).id).toBe(piId);
    expect(piView(file)).toEqual({ leaf: piId, branch: [...(await baseBranch()), piId] });
    expect([leftovers(file), readUndoRecords(file)]).toEqual([[], []]);
  });

  it("Pi's line lands right after condense's write: condense blanks its own bytes in place, Pi's entry stays the leaf", async () => {
    const file = freshCopy();
    const session = await loadSession(file);
    const pi = Pi.SessionManager.open(file);
    const entries = chainEntries(
      session,
      [
        { type: "custom", customType: "pi-condense", data: { n: 2 } },
        { type: "custom", customType: "pi-condense", data: { n: 3 } },
      ],
      NOW,
    );
    let piId = "";
    const error = await appendEntries(session, entries, { race: { afterAppend: () => (piId = pi.appendMessage(userMessage("after"))) } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConcurrentAppendError);
    const bytes = readFileSync(file);
    const lens = entries.map((e) => Buffer.byteLength(`${JSON.stringify(e)}\n`));
    const blank = bytes.subarray(session.size, session.size + lens[0] + lens[1]).toString();
    expect(blank).toBe(`${" ".repeat(lens[0] - 1)}\n${" ".repeat(lens[1] - 1)}\n`);
    expect(JSON.parse(bytes.subarray(session.size + lens[0] + lens[1]).toString()).id).toBe(piId);
    expect(piView(file)).toEqual({ leaf: piId, branch: [...(await baseBranch()), piId] });
    const ours = await loadSession(file);
    expect([ours.leaf?.id, ours.warnings, ours.problems]).toEqual([piId, [], []]);
    expect([leftovers(file), readUndoRecords(file)]).toEqual([[], []]);
  });
});

describe("condense killed mid-write while Pi keeps appending; the next condense command settles it", () => {
  let plan: PlannedWrite;
  let planned: string;
  beforeAll(async () => {
    planned = freshCopy();
    plan = await planWrite(planned, path.join(tmp.dir, "plan.json"), runCli, ["--set", "spillThreshold=4000"]);
  }, 60_000);

  /** Copy the planned session, start "Pi" on it, and kill a child's commit after `bytes` bytes. */
  async function tornWithPi(bytes: number): Promise<{ file: string; pi: any }> {
    const file = planned.replace(/\.jsonl$/, `-t${++seq}.jsonl`);
    cpSync(base, file);
    const pi = Pi.SessionManager.open(file);
    const child = await runProcess(process.execPath, [CHILD, build.dist, plan.planFile, file], {
      env: { ...process.env, CONDENSE_TEST_FAULT: `append:${bytes}` },
    });
    expect(child.signal).toBe("SIGKILL");
    return { file, pi };
  }

  /** The checks after the next command, for Pi's ids `piIds` and the count of our entries that must stay. */
  async function settleAndCheck(file: string, piIds: string[], oursKept: number): Promise<void> {
    const next = await runCli("metrics", file, "--json");
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(/another writer appended after condense run wrote; condense's \d+ bytes were blanked in place/);
    const bytes = readFileSync(file);
    expect(sha256(bytes.subarray(0, plan.preSize))).toBe(plan.preSha);
    expect(tailIsWhole(bytes, plan.preSize)).toBe(true);
    const view = piView(file);
    expect(view.leaf).toBe(piIds.at(-1));
    expect(view.branch).toEqual([...(await baseBranch()), ...plan.entryIds.slice(0, oursKept), ...piIds]);
    expect(leftovers(file)).toEqual([]);
    // Sidecars of a write that is gone are removed; the session reads without a warning.
    for (const s of plan.sidecars) expect(existsSync(s.path)).toBe(oursKept > 0);
    const ours = await loadSession(file);
    expect([ours.warnings, ours.problems]).toEqual([[], []]);
  }

  it("torn inside a line, then a running Pi appends twice (its first line glued to the fragment)", async () => {
    const { file, pi } = await tornWithPi(plan.firstLine + 100);
    const ids = [pi.appendMessage(userMessage("one")), pi.appendMessage(userMessage("two"))];
    // Before settling, Pi cannot read its own first line: its branch is cut there.
    expect(piView(file).branch.length).toBeLessThan((await baseBranch()).length);
    await settleAndCheck(file, ids, 0);
  });

  it("torn right after condense's first line, then Pi appends", async () => {
    const { file, pi } = await tornWithPi(plan.firstLine);
    const ids = [pi.appendMessage(userMessage("after line 0"))];
    await settleAndCheck(file, ids, 0);
  });

  it("torn inside the second line; Pi reopens the file (repairing the newline) and builds on condense's first entry: that entry stays", async () => {
    const { file } = await tornWithPi(plan.firstLine + 10);
    const reopened = Pi.SessionManager.open(file);
    expect(reopened.getLeafId()).toBe(plan.entryIds[0]);
    const ids = [reopened.appendMessage(userMessage("built on condense's entry"))];
    await settleAndCheck(file, ids, 1);
  });

  it("a foreign complete line where condense's first line should start is not taken for condense's", async () => {
    const file = planned.replace(/\.jsonl$/, `-f${++seq}.jsonl`);
    cpSync(base, file);
    const child = await runProcess(process.execPath, [CHILD, build.dist, plan.planFile, file], {
      env: { ...process.env, CONDENSE_TEST_FAULT: "step:journal" },
    });
    expect(child.signal).toBe("SIGKILL");
    const pi = Pi.SessionManager.open(file);
    const id = pi.appendMessage(userMessage("Pi wrote, condense never did"));
    const next = await runCli("render", file);
    expect(next.code).toBe(0);
    expect(piView(file)).toEqual({ leaf: id, branch: [...(await baseBranch()), id] });
    expect(leftovers(file)).toEqual([]);
  });
});
