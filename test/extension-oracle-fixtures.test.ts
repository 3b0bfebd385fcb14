/**
 * The real pi-condense extension as the oracle for every fixture (see
 * extension-oracle-shared.test.ts for what is compared). Fixtures Pi itself cannot open or
 * project are excluded, each with Pi's reason and condense's asserted; a fixture condense
 * refuses to write to is compared before `run` only, with the refusal asserted.
 */
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURES, makeTempDir } from "./helpers.js";
import { makeAgentDir, NODE22, oracleAvailable } from "./extension-oracle/client.js";
import {
  compareState,
  CYCLE,
  EMPTY,
  emptyFigures,
  NOW,
  PI_REFUSES,
  prepareCase,
  prepareSuite,
  type PreparedSession,
  STILL_WRITTEN,
} from "./extension-oracle/cases.js";

const present = oracleAvailable();
const files = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".jsonl"))
  .sort();

// The oracle is skipped only where the extension's source is absent (it lives beside the project);
// Node 22 comes from the repo's own devDependencies, so its absence fails here instead of skipping.
it("the node devDependency provides Node 22 for the extension oracle", () => {
  expect(execFileSync(NODE22, ["--version"], { encoding: "utf8" })).toMatch(/^v22\./);
});

describe.skipIf(!present)("the pi-condense extension in Pi 1.6 sends what condense renders (fixtures)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let suite: Map<string, PreparedSession>;
  const figures = emptyFigures();

  beforeAll(async () => {
    tmp = makeTempDir("extension-oracle-fixtures");
    const sources = files.filter((f) => f !== CYCLE).map((f) => path.join(FIXTURES, f));
    suite = await prepareSuite(sources, tmp.dir, makeAgentDir(path.join(tmp.dir, "agent")));
  }, 600_000);
  afterAll(() => tmp?.cleanup());

  for (const name of files.filter((f) => !PI_REFUSES[f] && f !== EMPTY && f !== STILL_WRITTEN && f !== CYCLE)) {
    it(`${name}: before and after run, Pi with the extension sends what condense renders`, () => {
      const {
        case: c,
        pi: [before, after],
      } = suite.get(name)!;
      compareState(`${name} before run`, c.before, before, figures);
      expect(c.run.code, c.run.stderr).toBe(0);
      compareState(`${name} after run`, c.after!, after, figures);
    });
  }

  for (const [name, reason] of Object.entries(PI_REFUSES)) {
    it(`${name}: excluded — Pi cannot use it, and condense refuses to run on it`, () => {
      const {
        case: c,
        pi: [before],
      } = suite.get(name)!;
      expect(before.openError).toMatch(reason.pi);
      expect(c.run.code).toBe(2);
      expect(c.run.stderr).toMatch(reason.condense);
      expect(c.after).toBeNull();
    });
  }

  it(`${CYCLE}: excluded — Pi loops on a parent cycle; condense refuses to render or run it`, async () => {
    const dir = path.join(tmp.dir, "cycle");
    const c = await prepareCase(CYCLE, path.join(FIXTURES, CYCLE), dir, { CONDENSE_NOW: NOW });
    expect(c.after).toBeNull();
    expect(c.run.code).toBe(2);
    expect(c.run.stderr).toMatch(
      /the active branch runs in a cycle: .*:2 \(byte 149\) names parent 33110a9e, which is on the same branch; Pi cannot open this session/,
    );
  });

  it(`${EMPTY}: excluded — Pi opens it as a session with no messages; condense refuses to render or run it`, () => {
    const {
      case: c,
      pi: [before],
    } = suite.get(EMPTY)!;
    expect(before.openError).toBeUndefined();
    expect(before.messages).toEqual([]);
    expect(before.changed).toBe(false);
    for (const r of [c.before.render, c.run]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("the file is empty: there is no session header and no entry");
    }
  });

  it(`${STILL_WRITTEN}: compared as it is; run refuses to write to a file whose last line is cut off`, () => {
    const {
      case: c,
      pi: [before],
    } = suite.get(STILL_WRITTEN)!;
    compareState(`${STILL_WRITTEN} before run`, c.before, before, figures);
    expect(c.run.code).toBe(2);
    expect(c.run.stderr).toMatch(
      /the final line \(line \d+, byte \d+\) is cut off mid-object \(the file may still be being written\); refusing to write to it/,
    );
    expect(c.after).toBeNull();
  });

  it("compared every kind of ref", () => {
    console.log(`extension oracle (fixtures): ${JSON.stringify(figures)}`);
    expect(figures.contexts).toBe(2 * (files.length - Object.keys(PI_REFUSES).length - 3) + 1);
    expect(figures.spilled).toBeGreaterThan(0);
    expect(figures.truncated).toBeGreaterThan(0);
    expect(figures.aliased).toBeGreaterThan(0);
    expect(figures.backfilled).toBeGreaterThan(0);
  });
});
