/**
 * Native mode on every fixture (see native-mode-shared.test.ts for what is checked): after
 * `run --target pi`, Pi 1.6 alone sends exactly `render --as pi-only`, a second run appends
 * nothing, the context is provider-valid, and with the extension switched on over the same file
 * Pi sends what condense renders, nothing twice, no more than Pi alone. Fixtures Pi cannot use
 * and those condense refuses to write to are excluded, each with both reasons asserted.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES, importPiCompaction, makeTempDir } from "./helpers.js";
import { makeAgentDir, oracleAvailable } from "./extension-oracle/client.js";
import { CYCLE, EMPTY, emptyFigures, PI_REFUSES, STILL_WRITTEN } from "./extension-oracle/cases.js";
import { expectNative, type Figure, pct, reductionTable, unansweredResults, unrecoverableResults } from "./native-mode/checks.js";
import { type NativeSession, prepareNativeSuite } from "./native-mode/suite.js";

const present = oracleAvailable();
const files = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".jsonl"))
  .sort();
const excluded = new Set([...Object.keys(PI_REFUSES), CYCLE, EMPTY, STILL_WRITTEN]);
/** Fixtures where stock Pi's context ends smaller than the extension's by more: [original, stock Pi, extension] in Pi's tokens. */
const PRUNES_MORE: Record<string, [number, number, number]> = {
  "duplicate-ids-one-message-second-failed.jsonl": [1347, 816, 957],
  "reused-id-failed-result-after-custom-message.jsonl": [787, 354, 508],
};

describe.skipIf(!present)("native mode: stock Pi sends the pruned context (fixtures)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let suite: Map<string, NativeSession>;
  let estimateTokens: (m: unknown) => number;
  const figures: Figure[] = [];
  const oracle = emptyFigures();

  beforeAll(async () => {
    tmp = makeTempDir("native-fixtures");
    estimateTokens = (await importPiCompaction()).estimateTokens;
    // Pi loops on a parent cycle (extension-oracle-fixtures.test.ts): never handed to Pi.
    const sources = files.filter((f) => f !== CYCLE).map((f) => path.join(FIXTURES, f));
    suite = await prepareNativeSuite(sources, tmp.dir, makeAgentDir(path.join(tmp.dir, "agent")));
  }, 600_000);
  afterAll(() => tmp?.cleanup());

  for (const name of files.filter((f) => !excluded.has(f))) {
    it(`${name}: Pi alone = render --as pi-only, idempotent, valid; the extension over it = render, nothing twice, no larger`, () => {
      figures.push(expectNative(name, suite.get(name)!, estimateTokens, oracle));
    });
  }

  it("query recovers every output a context edit replaced, but protected outputs kept in their chain's block", async () => {
    const missing: Record<string, string[]> = {};
    for (const name of files.filter((f) => !excluded.has(f))) {
      const s = suite.get(name)!;
      const keys = await unrecoverableResults(s.case.after!.piFile);
      if (keys.length > 0) missing[name] = keys;
      const orphans = new Set(unansweredResults(s.pi[0].piOnly));
      const blocks = (s.pi[1].piOnly as { content?: { text?: string }[] }[])
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .map((b) => b?.text ?? "");
      for (const key of keys) {
        const id = key.slice(0, key.lastIndexOf("@"));
        const original = (s.pi[0].piOnly as { role: string; toolCallId?: string; timestamp?: number; content: { text?: string }[] }[]).find(
          (m) => m.role === "toolResult" && `${m.toolCallId}@${m.timestamp}` === key,
        );
        const relocated = original !== undefined && blocks.some((t) => t.includes(`\n${original.content[0]?.text}\n</protected-output>`));
        expect(orphans.has(id) || relocated, `${name}: ${key}`).toBe(true);
      }
    }
    // Relocated verbatim into its chain's block (protected outputs are never indexed).
    expect(Object.keys(missing)).toEqual(["protected-chains.jsonl"]);
  });

  it("excluded: what Pi cannot use, and what condense refuses to write to", () => {
    for (const [name, reason] of Object.entries(PI_REFUSES)) {
      const s = suite.get(name)!;
      expect(s.pi[0].openError, name).toMatch(reason.pi);
      expect([s.case.run.code, s.extension.run.code], name).toEqual([2, 2]);
      expect(s.case.run.stderr).toMatch(reason.condense);
    }
    for (const name of [EMPTY, STILL_WRITTEN]) expect(suite.get(name)!.case.run.code, name).toBe(2);
    expect(suite.get(STILL_WRITTEN)!.case.run.stderr).toMatch(/the final line \(line \d+, byte \d+\) is cut off mid-object/);
  });

  it("stock Pi's reduction: within 5 points of the extension's; on the tiny shape fixtures within 25 tokens", () => {
    const rows = figures.map((f) => ({ ...f, pi: pct(f.original, f.piAlone), ext: pct(f.original, f.extension) }));
    console.log(`native mode (fixtures), ${reductionTable(rows)}`);
    expect(rows.length).toBe(files.length - excluded.size);
    // Below 1,000 tokens the recovery hints stock-Pi stubs carry (a few tokens each) are several points.
    for (const r of rows) {
      if (PRUNES_MORE[r.name]) {
        // Error purge per occurrence (docs/design.md §11): the earlier failed call's arguments go at
        // once, which the extension's bare-id rule keeps while the swept later failure is the latest.
        expect([r.original, r.piAlone, r.extension], r.name).toEqual(PRUNES_MORE[r.name]);
      } else if (r.original >= 1000)
        expect(Math.abs(r.pi - r.ext), `${r.name}: stock Pi ${r.pi.toFixed(1)}% vs extension ${r.ext.toFixed(1)}%`).toBeLessThanOrEqual(5);
      else expect(Math.abs(r.piAlone - r.extension), `${r.name}: stock Pi ${r.piAlone} vs extension ${r.extension} tokens`).toBeLessThanOrEqual(25);
    }
  });
});
