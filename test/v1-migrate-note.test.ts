/**
 * A v1 session: `run` and `compact` refuse it without --migrate, so the read-only commands that
 * print a figure "after condense run" (metrics, render --stats, budget, report) say so — a warning
 * on stderr worded like run's refusal, and in their JSON warnings — without changing the figures.
 */
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";
import { fixedLengthTempDir, SHARED_SESSIONS } from "./helpers.js";

const V1 = "pimono-custom-tool-session.v1.jsonl";
let dir: string;
let file: string;
let v3: string;
let cleanup = () => {};
beforeAll(() => {
  // Under /tmp whatever $TMPDIR says: stock-Pi stubs name the session's path, so the size after
  // `condense run` (asserted below) depends on the path's length.
  ({ dir, cleanup } = fixedLengthTempDir("v1-note"));
  file = path.join(dir, V1);
  v3 = path.join(dir, "migrated.jsonl");
  if (!existsSync(SHARED_SESSIONS)) return;
  copyFileSync(path.join(SHARED_SESSIONS, V1), file);
  copyFileSync(path.join(SHARED_SESSIONS, "pimono-custom-tool-session.migrated-v3.jsonl"), v3);
});
afterAll(() => cleanup());

// No Pi settings: the same target for everyone.
const ENV = () => ({ PI_CODING_AGENT_DIR: dir, CONDENSE_NOW: "2026-03-01T12:00:00.000Z" });
const note = () =>
  `${file}: a v1 session; Pi rewrites such files as v3 when it opens them. ` +
  "`condense run` and `condense compact` refuse it without --migrate (which backs it up and rewrites it as v3 first); " +
  "the figures after them here are what they would give with --migrate.";
const warningLines = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("warning:") && !l.includes("glued on one line"));

describe.skipIf(!existsSync(SHARED_SESSIONS))("a v1 session in the read-only commands", () => {
  it("run refuses it in the same words (exit 2)", async () => {
    const run = await runCli(["run", file], ENV());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`error: ${file}: a v1 session; Pi rewrites such files as v3 when it opens them. Run with --migrate`);
  });

  it.each(["metrics", "render --stats", "budget", "report"])("%s: the note on stderr, exit 0", async (command) => {
    const before = readFileSync(file);
    const r = await runCli([...command.split(" "), file], ENV());
    expect(r.code).toBe(0);
    expect(warningLines(r.stderr)).toEqual([`warning: ${note()}`]);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it.each([["metrics"], ["budget"], ["report"]])("%s --json: the note in the warnings", async (command) => {
    const r = await runCli([command, file, "--json"], ENV());
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    const warnings: string[] = command === "metrics" ? doc.sessions[0].warnings : (doc.warnings ?? doc.sessions?.[0]?.warnings);
    expect(warnings).toContain(note());
  });

  it("the figures stay; the v3 rewrite of the same session gets no note", async () => {
    const migrated = await runCli(["metrics", v3], ENV());
    expect(migrated.code).toBe(0);
    expect(warningLines(migrated.stderr)).toEqual([]);
    const stats = await runCli(["render", "--stats", file], ENV());
    expect(stats.stdout).toMatch(/context Pi sends \(stock Pi\): 21,265 ~tokens now → [\d,]+ after `condense run` \(-63%\)/);
  });
});
