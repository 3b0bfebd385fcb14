/**
 * Mutated-session fuzz (issue "Crash-proof", F), share 2 of 2 (the shares run in parallel):
 * see fuzz-run.ts for what is counted. Every count must be 0.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { importPiSessionManager, makeTempDir } from "../helpers.js";
import { fuzzShare } from "./fuzz-run.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  tmp = makeTempDir("fuzz2");
});
afterAll(() => tmp?.cleanup());

it("half of the mutated corpus through render, render --dry-run, query, metrics, budget and run: no crash, stack trace, bad exit code, changed or torn file, Pi-unopenable result, leftover or outside read", async () => {
  const Pi = await importPiSessionManager();
  const report = await fuzzShare(1, 2, Number(process.env.CONDENSE_FUZZ_SEEDS ?? 2), tmp.dir, Pi);
  expect(report.failures).toEqual([]);
  expect(report.inputs).toBeGreaterThanOrEqual(500);
  expect(report.commands).toBe(report.inputs * 6);
}, 300_000);
