/**
 * The recovery command in stock Pi (docs/design.md §11; the agent has no
 * `context_tree_query` there): on a session condensed with `run --target pi`, every stub and every
 * chain block Pi sends names a `condense query …` command; run through bash from the session's
 * working directory with `condense` on PATH, it prints each original output byte-exact. Checked
 * for a session where Pi keeps it (the command finds it by itself, with `$PI_SESSION_FILE` unset
 * as outside Pi, and set as Pi's bash tool sets it) and for one elsewhere (the command names it with
 * `--session`); on a shared session (summaries and chain blocks) and on a fixture with spilled and
 * truncated outputs (`--full`).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cwdFolderName } from "../src/session/locate.js";
import { buildCli } from "./built-cli.js";
import { runCli } from "./cli-harness.js";
import { FIXTURES, SHARED_SESSIONS, importPiMessages, importPiSessionManager, makeTempDir } from "./helpers.js";

type Msg = { role: string; content?: unknown; toolCallId?: string; timestamp?: number };
const textsOf = (m: Msg): string[] =>
  typeof m.content === "string" ? [m.content] : Array.isArray(m.content) ? m.content.flatMap((b) => (b?.type === "text" ? [b.text as string] : [])) : [];
const STUB = /^\[(Summarized in pruner summary|Oversized output spilled)/;
const COMMAND = /`(condense query [^`]+)`/;

/** Every stub and chain block Pi sends, with the command it names (undefined when it names none). */
function recoveryTexts(messages: Msg[]): { kind: "stub" | "block"; message: Msg; command?: string }[] {
  const out: { kind: "stub" | "block"; message: Msg; command?: string }[] = [];
  for (const m of messages) {
    for (const text of textsOf(m)) {
      const kind = m.role === "toolResult" && STUB.test(text) ? "stub" : m.role === "user" && text.startsWith("<compressed-chain") ? "block" : null;
      if (kind) out.push({ kind, message: m, command: COMMAND.exec(text)?.[1] });
    }
  }
  return out;
}

/** The output `condense query` printed for `ref` (text format: header lines, a blank line, the output). */
function printedOutput(stdout: string, ref: string): string | undefined {
  const at = stdout.indexOf(`=== ${ref} ===\n`);
  if (at < 0) return undefined;
  const start = stdout.indexOf("\n\n", at) + 2;
  const next = stdout.indexOf("\n\n=== t", start);
  return stdout.slice(start, next < 0 ? stdout.length - 1 : next);
}

describe("every stub and chain block names a condense query command that prints the original output", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let Pi: any;
  let PiMessages: any;
  let shim: string;
  let cli: ReturnType<typeof buildCli>;
  const agent = () => path.join(tmp.dir, "agent");

  beforeAll(async () => {
    tmp = makeTempDir("native-recovery");
    Pi = await importPiSessionManager();
    PiMessages = await importPiMessages();
    // `condense` on PATH: a build of these sources (the packed install is checked by install.test.ts).
    cli = buildCli("native-recovery");
    shim = path.join(tmp.dir, "bin");
    mkdirSync(shim);
    writeFileSync(path.join(shim, "condense"), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(cli.bin)} "$@"\n`, {
      mode: 0o755,
    });
  }, 120_000);
  afterAll(() => {
    tmp?.cleanup();
    cli?.cleanup();
  });

  /** A copy of `source` whose header says it was recorded in `work`, written to `file`. */
  const placeAt = (source: string, work: string, file: string) => {
    const [header, ...rest] = readFileSync(source, "utf8").split("\n");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, [JSON.stringify({ ...JSON.parse(header), cwd: work }), ...rest].join("\n"));
  };

  const cases = [
    { source: path.join(SHARED_SESSIONS, "kimchi-session.v3.jsonl"), inPiFolder: true },
    { source: path.join(SHARED_SESSIONS, "kimchi-session.v3.jsonl"), inPiFolder: false },
    { source: path.join(FIXTURES, "spill-truncate-reused-failed-id.jsonl"), inPiFolder: true },
    { source: path.join(FIXTURES, "spill-truncate-reused-failed-id.jsonl"), inPiFolder: false },
  ].filter((c) => existsSync(c.source));

  for (const { source, inPiFolder } of cases) {
    const name = path.basename(source);
    it(`${name} ${inPiFolder ? "in Pi's sessions folder" : "elsewhere (--session)"}`, async () => {
      const work = path.join(tmp.dir, `work-${name}-${inPiFolder}`);
      mkdirSync(work, { recursive: true });
      const folder = inPiFolder ? path.join(agent(), "sessions", cwdFolderName(work)) : path.join(tmp.dir, `elsewhere ${name}`);
      const file = path.join(folder, name);
      placeAt(source, work, file);
      const original = path.join(tmp.dir, `original-${name}-${inPiFolder}`);
      copyFileSync(file, original);
      const run = await runCli(["run", file, "--target", "pi", "--quiet"], { CONDENSE_NOW: "2026-02-01T00:00:00.000Z", PI_CODING_AGENT_DIR: agent() });
      expect(run.code, run.stderr).toBe(0);

      const sent = PiMessages.convertToLlm(Pi.SessionManager.open(file).buildSessionContext().messages) as Msg[];
      const originalOutputs = new Map<string, string>();
      for (const m of PiMessages.convertToLlm(Pi.SessionManager.open(original).buildSessionContext().messages) as Msg[]) {
        if (m.role === "toolResult") originalOutputs.set(`${m.toolCallId}@${m.timestamp}`, textsOf(m).join("\n"));
      }
      const named = recoveryTexts(sent);
      expect(named.filter((n) => n.kind === "stub").length).toBeGreaterThan(0);
      for (const n of named) expect(n.command, `a ${n.kind} names no command`).toBeDefined();
      if (!inPiFolder) for (const n of named) expect(n.command).toContain(` --session '${file}'`);
      if (inPiFolder) for (const n of named) expect(n.command).not.toContain("--session");

      const bash = (command: string, sessionFile?: string) =>
        spawnSync("bash", ["--norc", "-c", command], {
          cwd: work,
          encoding: "utf8",
          env: { ...process.env, PATH: `${shim}:${process.env.PATH}`, PI_CODING_AGENT_DIR: agent(), PI_SESSION_FILE: sessionFile ?? "" },
        });
      for (const n of named) {
        const command = n.command!;
        const refs = command
          .slice("condense query ".length)
          .split(" ")
          .filter((w) => /^t\d+$/.test(w));
        // The output each ref must print: for a stub, the result it stands in for; for a chain block,
        // the stored occurrence the ref names (which the original sent).
        const storedKeys = () => JSON.parse(bash(`${command} --json`).stdout).results.map((r: { ref: string; key: string }) => [r.ref, r.key]) as string[][];
        const keys = n.kind === "stub" ? [[refs[0], `${n.message.toolCallId}@${n.message.timestamp}`]] : storedKeys();
        expect(keys.map(([ref]) => ref)).toEqual(refs);
        for (const [ref, key] of keys) expect(originalOutputs.has(key), `${ref} names ${key}, which the original sent`).toBe(true);
        for (const sessionFile of inPiFolder ? [undefined, file] : [undefined]) {
          const r = bash(command, sessionFile);
          expect([r.status, r.stderr], `${command} (PI_SESSION_FILE ${sessionFile ? "set" : "unset"})`).toEqual([0, ""]);
          for (const [ref, key] of keys) expect(printedOutput(r.stdout, ref) === originalOutputs.get(key), `${command}: ${ref} byte-exact`).toBe(true);
        }
      }
    });
  }
});
