/**
 * One definition of "before" and "after" (docs/design.md "Context size"): `run`, `render --stats`,
 * `metrics` and `budget` print the same numbers for the same session (and `compact` the same
 * "before") — the context Pi sends now,
 * and after `run` — on every shared session; and once `run` has written, the context Pi sends is
 * what it said "after" would be.
 */
import { existsSync, utimesSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyInto, runCli, SHARED_SESSIONS, tempDir as makeTempDir } from "./cli-capture.js";
import { HEADERLESS_SHARED, sharedSessionFiles } from "./helpers.js";

const present = existsSync(SHARED_SESSIONS);
const files = sharedSessionFiles();
const HEADERLESS = HEADERLESS_SHARED;

type Size = { messages: number; chars: number; tokens: number };
const json = async (...args: string[]) => {
  const r = await runCli(...args, "--quiet");
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
};

describe.skipIf(!present)("run, render --stats, metrics and budget agree on before → after", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(() => {
    tmp = makeTempDir("agreement");
    process.env.CONDENSE_NOW = "2026-01-01T00:00:00.000Z";
  });
  afterAll(() => {
    delete process.env.CONDENSE_NOW;
    tmp?.cleanup();
  });

  it.each(files)("%s", async (name) => {
    const copy = copyInto(tmp.dir, path.join(SHARED_SESSIONS, name));
    // An old mtime: `run` must not take the copy for a session Pi is writing.
    utimesSync(copy, new Date("2025-01-01"), new Date("2025-01-01"));
    const migrate = /\.v1\.|hookmessage/.test(name) ? ["--migrate"] : [];
    if (name === HEADERLESS) {
      // Pi cannot open it: every read-only command fails on it (unusable input, exit 2), with the same reason.
      for (const args of [
        ["render", copy, "--stats"],
        ["metrics", copy],
        ["budget", copy],
      ]) {
        const r = await runCli(...args);
        expect(r.code, args[0]).toBe(2);
        expect(r.stderr, args[0]).toContain(`${copy}: no session header`);
      }
      return;
    }
    const render: { context: { before: Size; after: Size } } = await json("render", copy, "--stats", "--format", "json");
    const metrics: { sessions: { context: { before: Size; after: Size } }[] } = await json("metrics", copy, "--json", "--jobs", "1");
    const budget: { context: { before: Size; after: Size } } = await json("budget", copy, "--json");
    const expected = render.context;
    expect(expected.after.tokens).toBeLessThanOrEqual(expected.before.tokens);
    expect(metrics.sessions[0].context.before).toEqual(expected.before);
    expect(metrics.sessions[0].context.after).toEqual(expected.after);
    expect(budget.context).toEqual(expected);
    // compact measures the context it starts from the same way.
    const compact: { sessions: { context: { before: Size } }[] } = await json("compact", copy, "--dry-run", "--json", ...migrate);
    expect(compact.sessions[0].context.before).toEqual(expected.before);
    // (run's context also has stock Pi's figures, `piOnly`; these are the extension's.)
    const extensionView = ({ before, after }: { before: Size; after: Size }) => ({ before, after });
    const dry: { sessions: { context: { before: Size; after: Size } }[] } = await json("run", copy, "--dry-run", "--json", ...migrate);
    expect(extensionView(dry.sessions[0].context)).toEqual(expected);
    // Written for real: what Pi sends now is what "after" promised, and nothing is left to do.
    const written: { sessions: { context: { before: Size; after: Size } }[] } = await json("run", copy, "--json", ...migrate);
    expect(extensionView(written.sessions[0].context)).toEqual(expected);
    const later: { context: { before: Size; after: Size } } = await json("render", copy, "--stats", "--format", "json");
    expect(later.context.before).toEqual(expected.after);
    expect(later.context.after).toEqual(expected.after);
  });
});
