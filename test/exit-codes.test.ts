/**
 * Exit codes for sessions that cannot be used (README "Exit codes"), the same for every command
 * that reads a session: a file that is missing, not JSONL, or one Pi cannot open (no header) is
 * unusable input — exit 2 when it is the only session, nothing on stdout, the file unchanged; among
 * several sessions it is one failed file (exit 1, the others processed), except a missing one,
 * which stops the command before any work (exit 2).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copyInto, FIXTURES, runCli, tempDir } from "./cli-capture.js";

const tmp = tempDir("exit-codes");
afterAll(() => tmp.cleanup());

const example = readFileSync(path.join(FIXTURES, "example-session.jsonl"), "utf8");
const headerless = path.join(tmp.dir, "headerless.jsonl");
writeFileSync(headerless, example.slice(example.indexOf("\n") + 1));
const nonJson = path.join(tmp.dir, "not-json.jsonl");
writeFileSync(nonJson, "hello world\nnot json either\n");
const missing = path.join(tmp.dir, "missing.jsonl");

const firstLine = example.slice(example.indexOf("\n") + 1).split("\n")[0];
const type = JSON.parse(firstLine).type as string;
const CASES: [string, string, string][] = [
  [
    "no session header",
    headerless,
    `${headerless}: no session header: the first entry (line 1, a "${type}" entry) should be {"type":"session","id",...}; Pi refuses to open such a file`,
  ],
  ["not JSON", nonJson, `${nonJson}: not a JSONL session: none of its 2 non-blank line(s) is a JSON object`],
  ["missing", missing, `${missing}: no such file or directory, no glob match, and no session with that id in `],
];

/** Each command with its arguments around the session. */
const COMMANDS: [string, (file: string) => string[]][] = [
  ["run", (f) => ["run", f]],
  ["metrics", (f) => ["metrics", f]],
  ["render", (f) => ["render", f]],
  ["budget", (f) => ["budget", f]],
  ["compact", (f) => ["compact", f]],
  ["report", (f) => ["report", f]],
  ["query", (f) => ["query", "t1", "--session", f]],
];

describe("one unusable session: exit 2 for every command, nothing on stdout, the file unchanged", () => {
  for (const [what, file, message] of CASES) {
    for (const [name, args] of COMMANDS) {
      it(`${name}: ${what}`, async () => {
        const before = what === "missing" ? null : readFileSync(file);
        const r = await runCli(...args(file));
        expect(r.code).toBe(2);
        expect(r.stdout).toBe("");
        expect(r.stderr.startsWith(`error: ${message}`)).toBe(true);
        if (before) expect(readFileSync(file).equals(before)).toBe(true);
      });
    }
  }
});

describe("among several sessions: the unusable one fails (exit 1), the others are processed; a missing one stops all (exit 2)", () => {
  for (const [what, file, message] of CASES) {
    for (const name of ["run", "metrics", "compact", "report"]) {
      it(`${name}: ${what} + a good session`, async () => {
        const good = copyInto(tmp.dir, path.join(FIXTURES, "example-session.jsonl"), `good-${name}-${what.replace(/ /g, "-")}.jsonl`);
        const r = await runCli(name, good, file, "--json");
        const doc = JSON.parse(r.stdout);
        if (what === "missing") {
          expect(r.code).toBe(2);
          expect(doc.error.message.startsWith(message)).toBe(true);
          return;
        }
        expect(r.code).toBe(1);
        // run and compact add "; refusing to write to it".
        expect(doc.failures).toEqual([{ session: file, error: expect.stringMatching(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`)) }]);
        expect(doc.sessions.map((s: { session: string }) => s.session)).toEqual([good]);
      });
    }
  }

  it("the human report ends saying how many failed, for compact as for run", async () => {
    for (const name of ["run", "compact"]) {
      const good = copyInto(tmp.dir, path.join(FIXTURES, "example-session.jsonl"), `good-${name}-summary.jsonl`);
      const r = await runCli(name, good, nonJson, "--dry-run");
      expect(r.code).toBe(1);
      expect(r.stderr.endsWith("error: 1 of 2 sessions failed (listed above); the others were processed\n")).toBe(true);
    }
  });
});
