/**
 * The real pi-condense extension as the oracle on generated sessions (test/property/: reused and
 * duplicated ids, results of one millisecond, messages between calls and results, compactions,
 * branches), before and after `condense run` with the default settings: what Pi sends equals
 * `condense render --format json`, the extension knows every ref `run` wrote, including the refs
 * of results indexed only for recovery, and answers `context_tree_query` as `query --format tool`
 * does. So the recovery records and the shapes issue 12 changed leave Pi's request as the extension
 * builds it.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers.js";
import { makeAgentDir, oracleAvailable } from "./extension-oracle/client.js";
import { compareState, emptyFigures, prepareSuite, type PreparedSession } from "./extension-oracle/cases.js";
import { buildSession, scriptArbitrary } from "./property/sessions.js";

const SESSIONS = 60;
const SEED = 20261202;

describe.skipIf(!oracleAvailable())("the pi-condense extension in Pi 1.6 sends what condense renders (generated sessions)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let suite: Map<string, PreparedSession>;
  const names: string[] = [];
  const figures = emptyFigures();

  beforeAll(async () => {
    tmp = makeTempDir("extension-oracle-generated");
    const sources = fc.sample(scriptArbitrary, { seed: SEED, numRuns: SESSIONS }).map((script, i) => {
      const file = path.join(tmp.dir, `generated-${String(i).padStart(3, "0")}.jsonl`);
      // A final reply, so that no file ends on calls still running (run would leave such a file alone).
      writeFileSync(file, buildSession({ ...script, steps: [...script.steps, { kind: "reply", thinking: false, sameTimestamp: false }] }));
      names.push(path.basename(file));
      return file;
    });
    suite = await prepareSuite(sources, path.join(tmp.dir, "cases"), makeAgentDir(path.join(tmp.dir, "agent")));
  }, 600_000);
  afterAll(() => tmp?.cleanup());

  it(`${SESSIONS} generated sessions: 0 differing contexts, 0 unknown refs, 0 query disagreements before and after run`, () => {
    for (const name of names) {
      const {
        case: c,
        pi: [before, after],
      } = suite.get(name)!;
      compareState(`${name} before run`, c.before, before, figures);
      expect(c.run.code, `${name}: ${c.run.stderr}`).toBe(0);
      compareState(`${name} after run`, c.after!, after, figures);
    }
    console.log(`extension oracle (generated): ${JSON.stringify(figures)}`);
    expect(figures.contexts).toBe(2 * SESSIONS);
    expect(figures.backfilled).toBeGreaterThan(SESSIONS / 2);
  });
});
