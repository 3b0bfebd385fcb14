/**
 * Issue 12's property test: 2,000 generated sessions (random interleavings of calls, results,
 * custom messages, compactions, branches, reused ids and equal timestamps; test/property/) go
 * through `run` in memory, and the invariants of test/property/check.ts must hold on every one:
 * each stub's ref returns the text of the very result it replaced; every result stock Pi sends is
 * in the rendered request or recoverable; every call answered once before `run` is answered once
 * after it, and no result reaches the provider unmatched; the rendered context never grows; no
 * summary names a result the orphan sweep removes.
 *
 * Fixed seed; a failure prints the seed and path to replay it:
 *   CONDENSE_PROPERTY_SEED=<seed> CONDENSE_PROPERTY_PATH=<path> npx vitest run test/occurrence-property.test.ts
 * (CONDENSE_PROPERTY_RUNS=<n> changes the number of sessions.)
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkSession } from "./property/check.js";
import { buildSession, configOf, scriptArbitrary } from "./property/sessions.js";

const SEED = Number(process.env.CONDENSE_PROPERTY_SEED ?? 20261201);
const RUNS = Number(process.env.CONDENSE_PROPERTY_RUNS ?? 2000);
const PATH = process.env.CONDENSE_PROPERTY_PATH;

describe("generated sessions (issue 12 invariants)", () => {
  it(`${RUNS} sessions: stubs name their own output, nothing is lost, calls stay answered, the context never grows`, async () => {
    const figures = { sessions: 0, stubs: 0, recovered: 0, withheld: 0, written: 0, calls: 0 };
    await fc.assert(
      fc.asyncProperty(scriptArbitrary, async (script) => {
        const checked = await checkSession(buildSession(script), configOf(script.config));
        figures.sessions++;
        figures.stubs += checked.stubs;
        figures.recovered += checked.recovered;
        figures.calls += checked.calls;
        if (checked.withheld) figures.withheld++;
        if (checked.entries > 0) figures.written++;
        expect(checked.violations).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS, ...(PATH ? { path: PATH } : {}) },
    );
    console.log(`property (seed ${SEED}): ${JSON.stringify(figures)}`);
    // The generator reaches the shapes it is for.
    expect(figures.stubs).toBeGreaterThan(RUNS / 4);
    expect(figures.recovered).toBeGreaterThan(RUNS / 10);
  }, 300_000);
});
