/**
 * The real pi-condense extension (2.9.1, unmodified, loaded by Pi 1.6's own extension loader
 * under Node 22) as the oracle for every shared session, before and after `condense run`:
 * what Pi sends equals `condense render --format json`, the extension knows every short ref run
 * wrote (same occurrence key, no number it could hand out again), and its context_tree_query
 * text equals `condense query --format tool`. The shared files are never written: every
 * state is a temp copy.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSession } from "../src/session/session.js";
import { SHARED_SESSIONS, makeTempDir } from "./helpers.js";
import { makeAgentDir, oracleAvailable } from "./extension-oracle/client.js";
import { bytesOf, compareState, emptyFigures, HEADERLESS, prepareSuite, type PreparedSession, sharedSessionFiles } from "./extension-oracle/cases.js";

const present = existsSync(SHARED_SESSIONS) && oracleAvailable();
const files = present ? sharedSessionFiles() : [];

describe.skipIf(!present)("the pi-condense extension in Pi 1.6 sends what condense renders (shared sessions)", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let suite: Map<string, PreparedSession>;
  const figures = emptyFigures();
  const originals = new Map<string, Buffer>();

  beforeAll(async () => {
    tmp = makeTempDir("extension-oracle-shared");
    const sources = files.map((name) => path.join(SHARED_SESSIONS, name));
    for (const source of sources) originals.set(path.basename(source), bytesOf(source));
    // Two harness children: this machine has two cores.
    suite = await prepareSuite(sources, tmp.dir, makeAgentDir(path.join(tmp.dir, "agent")), 2);
  }, 600_000);
  afterAll(() => tmp?.cleanup());

  it("covers every shared session", () => {
    expect(files.length).toBe(19);
    expect(suite.size).toBe(files.length);
  });

  for (const name of files.filter((f) => f !== HEADERLESS)) {
    it(`${name}: before and after run, Pi with the extension sends what condense renders`, () => {
      const {
        case: c,
        pi: [before, after],
      } = suite.get(name)!;
      compareState(`${name} before run`, c.before, before, figures);
      expect(c.run.code, c.run.stderr).toBe(0);
      compareState(`${name} after run`, c.after!, after, figures);
      expect(bytesOf(c.source).equals(originals.get(name)!)).toBe(true);
    });
  }

  it(`${HEADERLESS}: excluded — Pi cannot open a file without a header, and condense refuses to run on it`, async () => {
    const {
      case: c,
      pi: [before],
    } = suite.get(HEADERLESS)!;
    expect(before.openError).toMatch(/not a valid pi session/);
    const session = await loadSession(c.source);
    expect(session.problems.map((p) => p.kind)).toEqual(["missing-header"]);
    expect(c.run.code).toBe(2);
    expect(c.run.stderr).toContain("no session header");
    expect(c.after).toBeNull();
  });

  it("compared enough refs, dedup aliases and chain back-fills among them", () => {
    // Filled by the tests above (vitest runs a file's tests in order). No shared session has an
    // output past spillThreshold or past query's 2000 lines / 50 KB: spilled and truncated
    // outputs are covered by the fixtures' oracle test.
    console.log(`extension oracle (shared sessions): ${JSON.stringify(figures)}`);
    expect(figures.contexts).toBe(2 * (files.length - 1));
    expect(figures.refs).toBeGreaterThanOrEqual(50);
    expect(figures.queries).toBeGreaterThanOrEqual(50);
    expect(figures.aliased).toBeGreaterThan(0);
    expect(figures.backfilled).toBeGreaterThan(0);
  });
});
