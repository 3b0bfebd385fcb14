/**
 * src/session/writer.ts: appending entries after the leaf, under a lock, never touching the
 * existing bytes, refusing when the file moved, and leaving the file alone on a crash or a lock.
 * Every write goes to a temp copy of a fixture.
 */
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, readFileSync, utimesSync } from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertToLlm, projectBranch } from "../src/context/projection.js";
import { loadSession } from "../src/session/session.js";
import type { NewEntry, SessionEntry } from "../src/session/types.js";
import { appendedBytes, appendEntries, chainEntries, EntryChain, FileChangedError, FileLockedError, serializeAppend } from "../src/session/writer.js";
import { copyInto, FIXTURES, HEX8, importPiMessages, importPiSessionManager, makeTempDir, SHARED_SESSIONS, loose } from "./helpers.js";

const NOW = "2026-02-01T12:00:00.000Z";
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** Payloads like the ones `run` appends: a custom state entry, a hidden custom message, a context edit. */
function payloads(targetId: string): NewEntry[] {
  return [
    { type: "custom", customType: "pi-condense", data: { version: 1, note: "state" } },
    { type: "custom_message", customType: "pi-condense", content: "## Pruner summary\nnothing yet", display: false },
    { type: "context_edit", targetId, replacement: { content: "[trimmed by the writer test]" } },
  ];
}

let tmp: ReturnType<typeof makeTempDir>;
let Pi: any;
let PiMessages: any;
let seq = 0;
beforeAll(async () => {
  tmp = makeTempDir("writer");
  Pi = await importPiSessionManager();
  PiMessages = await importPiMessages();
});
afterAll(() => tmp?.cleanup());

/** A fresh temp copy of a fixture (or of any file). */
function tempCopy(src: string): string {
  return copyInto(tmp.dir, src, `${++seq}-${path.basename(src)}`);
}

/** Copy, load, chain and append; return everything a test may look at. */
async function appendTo(src: string, nowIso = NOW, makePayloads = payloads) {
  const file = tempCopy(src);
  const before = readFileSync(file);
  const session = await loadSession(file);
  const leafId = session.leaf!.id;
  const oldIds = new Set(session.entries.map((e) => e.id));
  // The last toolResult on the branch is what the context edit trims.
  const target = loose([...session.branch].reverse()).find((e) => e.message?.role === "toolResult");
  const entries = chainEntries(session, makePayloads(target?.id ?? leafId), nowIso);
  const written = await appendEntries(session, entries);
  return { file, before, session, leafId, oldIds, entries, written, after: readFileSync(file) };
}

describe("appendEntries on a clean file", () => {
  const src = path.join(FIXTURES, "compaction-and-context-edit.jsonl");

  it("keeps the original bytes, appends parseable lines chained from the old leaf", async () => {
    const r = await appendTo(src);
    expect(r.leafId).toBe("e000001b");
    expect(r.after.length).toBe(r.before.length + r.written);
    expect(sha256(r.after.subarray(0, r.before.length))).toBe(sha256(r.before));
    const tail = r.after.subarray(r.before.length).toString("utf8");
    expect(tail).toBe(serializeAppend(r.session, r.entries));
    expect(tail.endsWith("\n")).toBe(true);
    const lines = tail.slice(0, -1).split("\n");
    expect(lines).toHaveLength(3);
    const parsed = lines.map((l) => JSON.parse(l) as SessionEntry);
    expect(parsed).toEqual(r.entries);
    expect(parsed.map((e) => e.type)).toEqual(["custom", "custom_message", "context_edit"]);
    // Chain: first child of the old leaf, then each the child of the one before.
    expect(parsed[0].parentId).toBe("e000001b");
    expect(parsed[1].parentId).toBe(parsed[0].id);
    expect(parsed[2].parentId).toBe(parsed[1].id);
    expect(parsed.every((e) => e.timestamp === NOW)).toBe(true);
    // `type` first, id/parentId/timestamp after the payload.
    expect(Object.keys(parsed[0])).toEqual(["type", "customType", "data", "id", "parentId", "timestamp"]);
    // Ids: 8 hex, unique among themselves and against the file.
    const newIds = parsed.map((e) => e.id);
    expect(newIds.every((id) => HEX8.test(id))).toBe(true);
    expect(new Set(newIds).size).toBe(3);
    expect(newIds.some((id) => r.oldIds.has(id))).toBe(false);
    // The lock is gone.
    expect(existsSync(`${r.file}.lock`)).toBe(false);
  });

  it("we and Pi both read the result: leaf = our last entry, the edit applies, contexts agree", async () => {
    const r = await appendTo(src);
    const last = r.entries[r.entries.length - 1];
    const sm = Pi.SessionManager.open(r.file);
    expect(sm.getLeafId()).toBe(last.id);
    // Pi did not need to repair or migrate anything.
    expect(readFileSync(r.file).equals(r.after)).toBe(true);

    const ours = await loadSession(r.file);
    expect(ours.warnings).toEqual([]);
    expect(ours.problems).toEqual([]);
    expect(ours.leaf?.id).toBe(last.id);
    expect(ours.branch.slice(-4).map((e) => e.id)).toEqual([r.leafId, ...r.entries.map((e) => e.id)]);
    const llm = convertToLlm(projectBranch(ours.branch).map((i) => i.message));
    expect(llm).toStrictEqual(PiMessages.convertToLlm(sm.buildSessionContext().messages));
    // The hidden custom_message is in context (display only affects Pi's UI); the tool result was trimmed.
    expect(llm[llm.length - 1]).toStrictEqual({
      role: "user",
      content: [{ type: "text", text: "## Pruner summary\nnothing yet" }],
      timestamp: Date.parse(NOW),
    });
    const trimmed = llm.find((m) => m.role === "toolResult" && m.toolCallId === "toolu_02");
    expect(trimmed?.content).toEqual([{ type: "text", text: "[trimmed by the writer test]" }]);
  });

  it("is deterministic: same input and clock → same bytes; another clock → other ids", async () => {
    const a = await appendTo(src);
    const b = await appendTo(src);
    expect(a.after.equals(b.after)).toBe(true);
    const c = await appendTo(src, "2026-02-01T12:00:00.001Z");
    expect(c.entries.map((e) => e.id)).not.toEqual(a.entries.map((e) => e.id));
    expect(c.entries[0].parentId).toBe(a.entries[0].parentId);
  });

  it("appends to a real v3 session, and Pi agrees on the leaf", async () => {
    const real = path.join(SHARED_SESSIONS, "trl-session.v3.jsonl");
    if (!existsSync(real)) return; // the shared sessions are optional (see oracle.test.ts)
    const r = await appendTo(real);
    expect(sha256(r.after.subarray(0, r.before.length))).toBe(sha256(r.before));
    const sm = Pi.SessionManager.open(r.file);
    expect(sm.getLeafId()).toBe(r.entries[2].id);
    expect(sm.getBranch().length).toBe(r.session.branch.length + 3);
  });

  it("appending nothing touches nothing", async () => {
    const file = tempCopy(src);
    const before = readFileSync(file);
    const session = await loadSession(file);
    expect(await appendEntries(session, [])).toBe(0);
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});

describe("newline repair", () => {
  it("a file without a final newline gets exactly one \\n before the new entries", async () => {
    const r = await appendTo(path.join(FIXTURES, "no-final-newline.jsonl"));
    expect(r.session.endsWithNewline).toBe(false);
    expect(r.before[r.before.length - 1]).not.toBe(0x0a);
    expect(sha256(r.after.subarray(0, r.before.length))).toBe(sha256(r.before));
    const body = r.entries.map((e) => `${JSON.stringify(e)}\n`).join("");
    expect(r.after.subarray(r.before.length).toString("utf8")).toBe(`\n${body}`);
    expect(r.written).toBe(1 + Buffer.byteLength(body));
    const lines = r.after.toString("utf8").split("\n");
    expect(lines).toHaveLength(3 + 3 + 1); // 3 old lines, 3 new, "" after the final newline
    expect(lines.slice(0, -1).every((l) => l.length > 0)).toBe(true);
    expect(r.entries[0].parentId).toBe("aa000002");

    const sm = Pi.SessionManager.open(r.file);
    expect(sm.getLeafId()).toBe(r.entries[2].id);
    expect(readFileSync(r.file).equals(r.after)).toBe(true); // Pi had nothing to repair
  });
});

describe("placing entries group by group", () => {
  it("gives exactly what one chainEntries call gives, ids never taken twice nor from the file", async () => {
    const session = await loadSession(path.join(FIXTURES, "compaction-and-context-edit.jsonl"));
    const all = payloads(session.leaf!.id);
    const whole = chainEntries(session, all, NOW);
    for (let cut = 0; cut <= all.length; cut++) {
      const chain = new EntryChain(session, NOW);
      const groups = [...chain.append(all.slice(0, cut)), ...chain.append([]), ...chain.append(all.slice(cut))];
      expect(serializeAppend(session, groups)).toBe(serializeAppend(session, whole));
    }
    expect(whole[0].parentId).toBe(session.leaf!.id);
    expect(new Set(whole.map((e) => e.id)).size).toBe(whole.length);
    for (const e of whole) expect(session.byId.has(e.id)).toBe(false);
    // The session's own ids are read, not copied or changed.
    expect(session.byId.size).toBe(session.entries.length);
  });

  it("counts the bytes serializeAppend gives, newline repair and multi-byte characters included", async () => {
    for (const name of ["compaction-and-context-edit.jsonl", "no-final-newline.jsonl"]) {
      const session = await loadSession(path.join(FIXTURES, name));
      const entries = chainEntries(session, [...payloads(session.leaf!.id), { type: "custom", customType: "x", data: { text: "é€😀\n\u2028" } }], NOW);
      expect(appendedBytes(session, entries), name).toBe(Buffer.byteLength(serializeAppend(session, entries), "utf8"));
    }
  });
});

describe("refusals leave the file alone", () => {
  const src = path.join(FIXTURES, "branched.jsonl");

  it("a byte appended after the read → FileChangedError, nothing written", async () => {
    const file = tempCopy(src);
    const session = await loadSession(file);
    const entries = chainEntries(session, payloads(session.leaf!.id), NOW);
    appendFileSync(file, "x");
    const changed = readFileSync(file);
    const error = await appendEntries(session, entries).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileChangedError);
    expect((error as Error).message).toBe(
      `${file} changed since it was read (size ${session.size} → ${session.size + 1} bytes); nothing was written — run again`,
    );
    expect(readFileSync(file).equals(changed)).toBe(true);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("same size but a new modification time → FileChangedError, nothing written", async () => {
    const file = tempCopy(src);
    const session = await loadSession(file);
    const before = readFileSync(file);
    utimesSync(file, new Date(session.mtimeMs + 5000), new Date(session.mtimeMs + 5000));
    const error = await appendEntries(session, chainEntries(session, payloads(session.leaf!.id), NOW)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FileChangedError);
    expect((error as Error).message).toBe(`${file} changed since it was read (modification time moved); nothing was written — run again`);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("a crash right before the write (beforeWrite throws) → the error surfaces, the file is unchanged, the lock released", async () => {
    const file = tempCopy(src);
    const before = readFileSync(file);
    const session = await loadSession(file);
    const entries = chainEntries(session, payloads(session.leaf!.id), NOW);
    const crash = new Error("simulated crash");
    await expect(
      appendEntries(session, entries, {
        beforeWrite: () => {
          throw crash;
        },
      }),
    ).rejects.toBe(crash);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}.lock`)).toBe(false);
    // Nothing is left behind that would block the next run.
    expect(await appendEntries(session, entries)).toBeGreaterThan(0);
  });

  it("a lock held by someone else → FileLockedError, file unchanged", async () => {
    const file = tempCopy(src);
    const before = readFileSync(file);
    const session = await loadSession(file);
    const entries = chainEntries(session, payloads(session.leaf!.id), NOW);
    const release = await lockfile.lock(file);
    try {
      const error = await appendEntries(session, entries).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FileLockedError);
      // A lock without an owner record (taken by proper-lockfile itself): named by its folder, never taken over while fresh.
      expect((error as Error).message).toMatch(
        new RegExp(
          `^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is locked \\(lock folder .*\\.lock, refreshed \\d+ s ago; owner unknown: another machine, Pi's tooling or an older condense\\); it is taken as abandoned after 30 s without refresh; nothing was written$`,
        ),
      );
      expect(readFileSync(file).equals(before)).toBe(true);
    } finally {
      await release();
    }
    // Once the lock is released the same append goes through.
    expect(await appendEntries(session, entries)).toBeGreaterThan(0);
  });
});
