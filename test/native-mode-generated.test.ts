/**
 * Native mode (`run --target pi`) over the property test's generated sessions (test/property/:
 * tool-call ids drawn from a small pool, so ids recur across turns and inside one message; failed
 * calls with large arguments; results doubled, missing, under a wrong id, after a custom message;
 * compactions, branches), planned in memory as `run` plans them:
 * - a second run on the file with the first run's entries appended plans nothing (the first run
 *   reaches the fixed point, error purge included);
 * - every prefix of the first run's append (what a Pi reading a torn write sends, projected as Pi
 *   projects it: `render --as pi-only` is checked against Pi's own projection elsewhere) holds no
 *   tool result without its call beyond those the session already had.
 *
 * Fixed seed; a failure prints the seed and path to replay it:
 *   CONDENSE_PROPERTY_SEED=<seed> CONDENSE_PROPERTY_PATH=<path> npx vitest run test/native-mode-generated.test.ts
 * (CONDENSE_PROPERTY_RUNS=<n> changes the number of sessions.)
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { convertToLlm, projectBranch } from "../src/context/projection.js";
import { planRun } from "../src/pipeline/plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { parseSessionText } from "../src/session/reader.js";
import { buildSession as indexSession } from "../src/session/session.js";
import type { SessionEntry } from "../src/session/types.js";
import { deterministicSummarizer } from "../src/summarize/deterministic.js";
import { unansweredResults } from "./native-mode/checks.js";
import { buildSession, configOf, scriptArbitrary } from "./property/sessions.js";

const SEED = Number(process.env.CONDENSE_PROPERTY_SEED ?? 20261203);
const RUNS = Number(process.env.CONDENSE_PROPERTY_RUNS ?? 1000);
const PATH = process.env.CONDENSE_PROPERTY_PATH;
const NOW_MS = Date.parse("2026-06-01T00:00:00.000Z");
const PI = { target: { used: "pi" as const, reason: "--target pi" }, recovery: {} };

/** Per tool-call id, how many results Pi sends without their call. */
function unanswered(branch: SessionEntry[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of unansweredResults(convertToLlm(projectBranch(branch).map((i) => i.message)))) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

describe("native mode over generated sessions (reused ids)", () => {
  it(`${RUNS} sessions: the first run reaches the fixed point, and every prefix of its append is valid for providers`, async () => {
    const figures = { sessions: 0, written: 0, edits: 0, purged: 0, omitted: 0, prefixes: 0 };
    await fc.assert(
      fc.asyncProperty(scriptArbitrary, async (script) => {
        const config = configOf(script.config);
        const text = buildSession(script);
        const session = indexSession(parseSessionText("/virtual/s.jsonl", text));
        const options = { summarizer: deterministicSummarizer, concurrency: 1, nowMs: NOW_MS, targetPath: session.path, ...PI };
        const plan = await planRun(sessionView(session, config), options);
        figures.sessions++;
        const edits = plan.report.contextEdits;
        if (plan.entries.length > 0) figures.written++;
        figures.edits += edits?.written ?? 0;
        figures.purged += plan.entries.filter((e) => e.type === "context_edit" && JSON.stringify(e).includes('"_purged":')).length;
        figures.omitted += edits?.omitted ?? 0;

        const before = unanswered(session.branch);
        for (let k = 1; k <= plan.entries.length; k++) {
          figures.prefixes++;
          for (const [id, n] of unanswered([...session.branch, ...plan.entries.slice(0, k)])) {
            expect(n, `after ${k} of ${plan.entries.length} entries: results of ${id} without their call`).toBeLessThanOrEqual(before.get(id) ?? 0);
          }
        }

        const appended = text + plan.entries.map((e) => `${JSON.stringify(e)}\n`).join("");
        const again = indexSession(parseSessionText("/virtual/s.jsonl", appended));
        const second = await planRun(sessionView(again, config), { ...options, nowMs: NOW_MS + 1000 });
        expect(
          second.entries.map((e) => (e as { customType?: string }).customType ?? e.type),
          "a second run plans nothing",
        ).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS, ...(PATH ? { path: PATH } : {}) },
    );
    console.log(`native property (seed ${SEED}): ${JSON.stringify(figures)}`);
    // The generator reaches the shapes it is for.
    expect(figures.purged).toBeGreaterThan(RUNS / 20);
    expect(figures.omitted).toBeGreaterThan(RUNS / 4);
  }, 300_000);
});
