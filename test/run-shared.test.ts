/**
 * The main job on every real session in ../shared/sessions (temporary copies): exit codes, untouched
 * original bytes, idempotence, byte-exact records, Pi's own SessionManager reading the result, and
 * identical bytes whatever the concurrency.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resultTextOf } from "../src/prune/capture.js";
import { occurrenceKey } from "../src/context/vocabulary.js";
import { loadSession } from "../src/session/session.js";
import { runCli } from "./cli-harness.js";
import { copyInto, importPiSessionManager, loose, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

const NOW = "2026-02-02T00:00:00.000Z";
const files = existsSync(SHARED_SESSIONS)
  ? readdirSync(SHARED_SESSIONS)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()
  : [];
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const tmp = makeTempDir("shared-run");
afterAll(() => tmp.cleanup());

/** Original tool-result texts by occurrence key, read from the unpruned file. */
async function originalResults(file: string): Promise<Map<string, string>> {
  const s = await loadSession(file);
  const out = new Map<string, string>();
  for (const e of s.entries) {
    if (e.type === "message" && e.message.role === "toolResult") out.set(occurrenceKey(e.message.toolCallId, e.message.timestamp), resultTextOf(e.message));
  }
  return out;
}

describe.skipIf(files.length === 0)("run on every shared session", () => {
  it.each(files)("%s", async (name) => {
    const dir = path.join(tmp.dir, name.replace(/\W/g, "_"));
    const file = copyInto(makeDir(dir), path.join(SHARED_SESSIONS, name));
    const original = readFileSync(file);
    const source = await loadSession(file);

    if (!source.header) {
      // Header-less (gjc-01): Pi refuses the file, so do we — with a clear message and nothing written.
      const r = await runCli([file]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("no session header");
      expect(readFileSync(file).equals(original)).toBe(true);
      return;
    }

    if (source.fileVersion < 3) {
      const refused = await runCli([file]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`a v${source.fileVersion} session`);
      expect(readFileSync(file).equals(original)).toBe(true);
      const r = await runCli([file, "--migrate", "--quiet"], { CONDENSE_NOW: NOW });
      expect(r.code).toBe(0);
      expect(readFileSync(`${file}.v${source.fileVersion}.bak`).equals(original)).toBe(true);
      const migrated = await loadSession(file);
      expect(migrated.fileVersion).toBe(3);
      // The migrated entries are the original ones, in order.
      expect(migrated.entries.slice(0, source.entries.length).map((e) => e.type)).toEqual(source.entries.map((e) => e.type));
    } else {
      const r = await runCli([file, "--json"], { CONDENSE_NOW: NOW });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).failures).toEqual([]);
      // Existing bytes unchanged (a missing final newline would be the only addition).
      expect(sha256(readFileSync(file).subarray(0, original.length))).toBe(sha256(original));
    }

    // A second run appends nothing.
    const size = readFileSync(file).length;
    const again = await runCli([file, "--json"], { CONDENSE_NOW: NOW });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).sessions[0].entriesAppended).toBe(0);
    expect(readFileSync(file).length).toBe(size);

    // Every indexed record holds the original output byte for byte (or its sidecar does).
    const originals = await originalResults(file);
    const after = await loadSession(file);
    let records = 0;
    for (const e of after.entries) {
      if (e.type !== "custom" || e.customType !== "context-prune-index") continue;
      for (const rec of (e.data as any).toolCalls) {
        const text = rec.spillPath ? readFileSync(rec.spillPath, "utf8") : rec.resultText;
        expect(text).toBe(originals.get(occurrenceKey(rec.toolCallId, rec.resultTimestamp)));
        records++;
      }
    }
    const summaries = after.entries.filter((e) => e.type === "custom_message" && e.customType === "context-prune-summary");
    if (summaries.length > 0) expect(records).toBeGreaterThan(0);

    // Pi's own SessionManager opens the result; its leaf is our last entry and its context holds the summaries.
    const { SessionManager } = await importPiSessionManager();
    const sm = SessionManager.open(file, path.join(dir, "pi-sessions"));
    expect(sm.getLeafId()).toBe(after.entries[after.entries.length - 1].id);
    const context = sm.buildSessionContext().messages;
    const inContext = context.filter((m: any) => m.role === "custom" && m.customType === "context-prune-summary");
    expect(inContext.map((m: any) => m.content)).toEqual(loose(summaries).map((s) => s.content));
  });

  it.each(files.filter((f) => !f.includes("gjc-01")))("%s: the same bytes for --concurrency 1 and 8, and across copies", async (name) => {
    const base = path.join(tmp.dir, `conc-${name.replace(/\W/g, "_")}`);
    const run = async (sub: string, concurrency: string) => {
      const file = copyInto(makeDir(path.join(base, sub)), path.join(SHARED_SESSIONS, name), "s.jsonl");
      const r = await runCli([file, "--migrate", "--quiet", "--concurrency", concurrency], { CONDENSE_NOW: NOW });
      expect(r.code).toBe(0);
      return readFileSync(file);
    };
    const a = await run("a", "1");
    const b = await run("b", "8");
    const c = await run("c", "8");
    expect(b.equals(a)).toBe(true);
    expect(c.equals(a)).toBe(true);
  });
});

function makeDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}
