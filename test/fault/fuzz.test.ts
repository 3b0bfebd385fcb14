/**
 * Mutated-session fuzz (issue "Crash-proof", F): the corpus (fuzz-corpus.ts, ≥1,000 inputs) in two
 * halves through every command; see fuzz-run.ts for what is counted. Every count must be 0.
 * `CONDENSE_FUZZ_SEEDS=8` runs a larger corpus locally.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { importPiSessionManager, makeTempDir } from "../helpers.js";
import { corpus } from "./fuzz-corpus.js";
import { fuzzShare } from "./fuzz-run.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  tmp = makeTempDir("fuzz");
});
afterAll(() => tmp?.cleanup());

const SEEDS = Number(process.env.CONDENSE_FUZZ_SEEDS ?? 2);

it("the corpus has at least 1,000 inputs", () => {
  expect(corpus(SEEDS, "/nowhere/canary.txt").length).toBeGreaterThanOrEqual(1000);
});

for (const part of [0, 1]) {
  it(`half ${part + 1} of the corpus through render, render --dry-run, query (also --format tool), metrics, budget, run and compact: no crash, stack trace, bad exit code, changed or torn file, Pi-unopenable result, leftover or outside read`, async () => {
    const Pi = await importPiSessionManager();
    const report = await fuzzShare(part, 2, SEEDS, tmp.dir, Pi);
    expect(report.failures).toEqual([]);
    expect(report.inputs).toBeGreaterThanOrEqual(500);
    expect(report.commands).toBe(report.inputs * 8);
  }, 300_000);
}
