/**
 * `run --json`'s `batches`: every captured batch has exactly one outcome, so `captured` is the sum
 * of `summarized`, `skippedTrivial`, `skippedDeduped`, `skippedOversized`, `failed` and `spilled`.
 * A batch whose every output is `spillThreshold` characters or more is taken whole by the spill
 * step: no summary is asked for. It counts as `spilled` when an output went to a sidecar, and as
 * `skippedDeduped` when each output was an alias of an identical one indexed already.
 */
import { mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyInto, fixture, runCliWith, tempDir } from "./cli-capture.js";
import { HEADERLESS_SHARED, SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

const NOW = { CONDENSE_NOW: "2026-02-01T00:00:00.000Z" };
const tmp = tempDir("batch-counts");
afterAll(() => tmp.cleanup());

type Batches = Record<"captured" | "summarized" | "skippedTrivial" | "skippedDeduped" | "skippedOversized" | "failed" | "spilled", number>;
const outcomes = (b: Batches) => b.summarized + b.skippedTrivial + b.skippedDeduped + b.skippedOversized + b.failed + b.spilled;

async function dryRun(files: string[], ...args: string[]) {
  const r = await runCliWith(NOW, "run", ...files, "--dry-run", "--json", "--jobs", "1", ...args);
  return { code: r.code, doc: JSON.parse(r.stdout) };
}

describe("batches taken whole by the spill step", () => {
  it("one 75,418-character output alone in its batch: spilled, and the outcomes add up to captured", async () => {
    const { code, doc } = await dryRun([fixture("spilled-output-then-short-chains.jsonl")]);
    expect(code).toBe(0);
    const s = doc.sessions[0];
    expect(s.batches).toEqual({ captured: 4, summarized: 3, skippedTrivial: 0, skippedDeduped: 0, skippedOversized: 0, failed: 0, spilled: 1 });
    expect(s.calls.spilled).toBe(1);
  });

  it("the same huge log twice: the first batch spilled, the second an alias of it (deduplicated)", async () => {
    const { doc } = await dryRun([fixture("spill-truncate-reused-failed-id.jsonl")]);
    const s = doc.sessions[0];
    expect(s.batches).toEqual({ captured: 4, summarized: 1, skippedTrivial: 1, skippedDeduped: 1, skippedOversized: 0, failed: 0, spilled: 1 });
    expect([s.calls.spilled, s.calls.deduped]).toEqual([1, 1]);
  });

  it("the table gives the batches spilled whole beside the outputs spilled, and says so below", async () => {
    const r = await runCliWith({ ...NOW, COLUMNS: "200" }, "run", fixture("spilled-output-then-short-chains.jsonl"), "--dry-run");
    expect(r.code).toBe(0);
    const row = r.stdout.split("\n").find((l) => l.includes("dump the log")) ?? "";
    const cells = row.split("│").map((c) => c.trim());
    expect(cells.slice(2, 6)).toEqual(["4", "3", "0/0/0", "1 (1)"]);
    expect(r.stdout).toContain("skipped t/d/o = trivial / deduplicated / oversized · spilled = outputs (batches spilled whole) · context =");
    // Without a batch spilled whole, neither: the spilled column counts outputs alone.
    const plain = await runCliWith({ ...NOW, COLUMNS: "200" }, "run", fixture("spill-and-duplicate.jsonl"), "--dry-run");
    expect(plain.stdout).not.toContain("batches spilled whole");
  });
});

const shared = sharedSessionFiles();

describe.skipIf(shared.length === 0)("captured = the sum of the outcomes on every shared session", () => {
  const dir = path.join(tmp.dir, "shared");
  let files: string[] = [];
  beforeAll(() => {
    mkdirSync(dir);
    files = shared.map((name) => copyInto(dir, path.join(SHARED_SESSIONS, name)));
  });

  it.each([
    ["the default spillThreshold", []],
    ["spillThreshold 4096, where many batches spill whole", ["--set", "spillThreshold=4096"]],
  ])("%s", async (_label, args) => {
    // --migrate reads the v1/v2 files as Pi does; a dry run still writes nothing.
    const { doc } = await dryRun(files, "--migrate", ...args);
    expect(doc.failures.map((f: { session: string }) => path.basename(f.session))).toEqual([HEADERLESS_SHARED]);
    expect(doc.sessions.length).toBe(shared.length - 1);
    for (const s of doc.sessions) expect([path.basename(s.session), outcomes(s.batches)]).toEqual([path.basename(s.session), s.batches.captured]);
    const trl = doc.sessions.find((s: { session: string }) => s.session.endsWith("trl-session.v3.jsonl"));
    expect(trl.batches).toEqual(
      args.length === 0
        ? { captured: 72, summarized: 13, skippedTrivial: 58, skippedDeduped: 1, skippedOversized: 0, failed: 0, spilled: 0 }
        : { captured: 72, summarized: 3, skippedTrivial: 58, skippedDeduped: 2, skippedOversized: 0, failed: 0, spilled: 9 },
    );
    expect(readdirSync(dir).sort()).toEqual(shared);
  });
});
