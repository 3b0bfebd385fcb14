/**
 * The session a command uses when none is named is the one `pi --continue` opens: checked against Pi
 * 1.6's own `SessionManager.continueRecent` (session-manager.js, loaded by file path) on session
 * folders built here — per-cwd default, `$PI_CODING_AGENT_SESSION_DIR`, the `sessionDir` setting —
 * and `$PI_SESSION_FILE` (set by Pi's bash tool) wins over all of them.
 * Pi's settings manager does not import on Node 20, so which folder the `sessionDir` setting selects
 * (project `.pi/settings.json` over the global one, relative to the cwd) is written out here from
 * Pi's documented rules; the search inside that folder is still Pi's.
 */
import { copyFileSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { cwdFolderName, jsonlFilesBelow, latestSessionFor, resolveSessionArgs } from "../src/session/locate.js";
import { runCli } from "./cli-harness.js";
import { importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

let Pi: any;
const tmp = makeTempDir("locate-pi");
const saved = { ...process.env };

beforeAll(async () => {
  Pi = await importPiSessionManager();
});
afterAll(() => tmp.cleanup());
afterEach(() => {
  for (const key of ["PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "PI_SESSION_FILE"]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

let counter = 0;
/** A fresh agent dir and working dir; Pi reads `PI_CODING_AGENT_DIR` from process.env. */
function world(): { agent: string; cwd: string; env: NodeJS.ProcessEnv } {
  const root = path.join(tmp.dir, `w${++counter}`);
  const agent = path.join(root, "agent");
  const cwd = path.join(root, "project");
  mkdirSync(agent, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  process.env.PI_CODING_AGENT_DIR = agent;
  delete process.env.PI_CODING_AGENT_SESSION_DIR;
  delete process.env.PI_SESSION_FILE;
  return { agent, cwd, env: { PI_CODING_AGENT_DIR: agent } };
}

/** A session file with `lines` (header first unless given), modified at `mtimeSec` (epoch seconds). */
function session(dir: string, name: string, header: object | string, mtimeSec: number, rest: string[] = []): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  const head = typeof header === "string" ? header : JSON.stringify(header);
  writeFileSync(file, `${[head, ...rest].join("\n")}\n`);
  utimesSync(file, mtimeSec, mtimeSec);
  return file;
}
const hdr = (id: string, cwd: string) => ({ type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd });

/** Pi's answer: `SessionManager.continueRecent(cwd, sessionDir).getSessionFile()` (a new file when none is found). */
function piContinue(cwd: string, sessionDir?: string): string | undefined {
  return Pi.SessionManager.continueRecent(cwd, sessionDir).getSessionFile();
}

describe("no session argument: the session pi --continue opens", () => {
  it("per-cwd default folder: the newest file with a valid header; a file without one is skipped", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    session(dir, "a.jsonl", hdr("a", cwd), 1_700_000_100);
    const b = session(dir, "b.jsonl", hdr("b", cwd), 1_700_000_200);
    session(dir, "c.jsonl", '{"type":"message","id":"x"}', 1_700_000_300);
    session(dir, "d.txt", hdr("d", cwd), 1_700_000_400);
    expect(await latestSessionFor(cwd, env)).toBe(b);
    expect(piContinue(cwd)).toBe(b);
  });

  it("links that lead nowhere (a loop, a missing target) are no session to continue; the newest real one is", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    const a = session(dir, "a.jsonl", hdr("a", cwd), 1_700_000_100);
    symlinkSync(path.join(dir, "y.jsonl"), path.join(dir, "x.jsonl"));
    symlinkSync(path.join(dir, "x.jsonl"), path.join(dir, "y.jsonl"));
    symlinkSync(path.join(dir, "missing.jsonl"), path.join(dir, "z.jsonl"));
    expect(await latestSessionFor(cwd, env)).toBe(a);
  });

  it("blank and non-JSON lines before the header are skipped, as Pi's header scan does", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    session(dir, "a.jsonl", hdr("a", cwd), 1_700_000_100);
    const b = session(dir, "b.jsonl", `\n{not json\n${JSON.stringify(hdr("b", cwd))}`, 1_700_000_200);
    expect(await latestSessionFor(cwd, env)).toBe(b);
    expect(piContinue(cwd)).toBe(b);
  });

  it("$PI_CODING_AGENT_SESSION_DIR: a flat folder, only sessions whose header cwd is this cwd", async () => {
    const { cwd, env } = world();
    const flat = path.join(path.dirname(cwd), "flat");
    const mine = session(flat, "mine.jsonl", hdr("m", cwd), 1_700_000_100);
    session(flat, "other.jsonl", hdr("o", "/somewhere/else"), 1_700_000_200);
    session(flat, "nocwd.jsonl", hdr("n", ""), 1_700_000_300);
    process.env.PI_CODING_AGENT_SESSION_DIR = flat;
    expect(await latestSessionFor(cwd, { ...env, PI_CODING_AGENT_SESSION_DIR: flat })).toBe(mine);
    expect(piContinue(cwd, flat)).toBe(mine);
  });

  it("$PI_CODING_AGENT_SESSION_DIR naming the per-cwd default folder: no cwd filter", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    session(dir, "mine.jsonl", hdr("m", cwd), 1_700_000_100);
    const foreign = session(dir, "foreign.jsonl", hdr("f", "/somewhere/else"), 1_700_000_200);
    expect(await latestSessionFor(cwd, { ...env, PI_CODING_AGENT_SESSION_DIR: dir })).toBe(foreign);
    expect(piContinue(cwd, dir)).toBe(foreign);
  });

  it("the sessionDir setting: the project's (relative to the cwd) over the global one", async () => {
    const { agent, cwd, env } = world();
    const globalDir = path.join(path.dirname(cwd), "global-sessions");
    writeFileSync(path.join(agent, "settings.json"), JSON.stringify({ sessionDir: globalDir }));
    const g = session(globalDir, "g.jsonl", hdr("g", cwd), 1_700_000_100);
    expect(await latestSessionFor(cwd, env)).toBe(g);
    expect(piContinue(cwd, globalDir)).toBe(g);

    mkdirSync(path.join(cwd, ".pi"));
    writeFileSync(path.join(cwd, ".pi", "settings.json"), JSON.stringify({ sessionDir: "local-sessions" }));
    const localDir = path.join(cwd, "local-sessions");
    const l = session(localDir, "l.jsonl", hdr("l", cwd), 1_700_000_050);
    expect(await latestSessionFor(cwd, env)).toBe(l);
    expect(piContinue(cwd, localDir)).toBe(l);

    // The environment variable wins over both settings.
    const envDir = path.join(path.dirname(cwd), "env-sessions");
    const e = session(envDir, "e.jsonl", hdr("e", cwd), 1_700_000_010);
    expect(await latestSessionFor(cwd, { ...env, PI_CODING_AGENT_SESSION_DIR: envDir })).toBe(e);
  });

  it("$PI_SESSION_FILE (set by Pi's bash tool) wins over the newest session of the cwd", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    const older = session(dir, "older.jsonl", hdr("o", cwd), 1_700_000_100);
    const newer = session(dir, "newer.jsonl", hdr("n", cwd), 1_700_000_200);
    expect(await resolveSessionArgs([], { cwd, env })).toEqual([newer]);
    expect(await resolveSessionArgs([], { cwd, env: { ...env, PI_SESSION_FILE: older } })).toEqual([older]);
    // A relative value is read from the given cwd, not the process's.
    expect(await resolveSessionArgs([], { cwd, env: { ...env, PI_SESSION_FILE: path.relative(cwd, older) } })).toEqual([older]);
  });

  it("a $PI_SESSION_FILE naming no session is an error naming it, never a fall-back to another session", async () => {
    const { agent, cwd, env } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    session(dir, "newer.jsonl", hdr("n", cwd), 1_700_000_200);
    const gone = path.join(dir, "gone.jsonl");
    const notSession = session(dir, "no-header.jsonl", '{"type":"message","id":"x"}', 1_700_000_100);
    const tail = "condense reads no other session in its place — unset it, or";
    await expect(resolveSessionArgs([], { cwd, env: { ...env, PI_SESSION_FILE: gone } })).rejects.toThrow(
      `$PI_SESSION_FILE names ${gone}, which does not exist; ${tail} pass a session file, directory, glob or session id`,
    );
    await expect(resolveSessionArgs([], { cwd, env: { ...env, PI_SESSION_FILE: notSession } })).rejects.toThrow(
      `$PI_SESSION_FILE names ${notSession}, which is not a Pi session (no session header); ${tail} pass a session file, directory, glob or session id`,
    );
    // condense query, run in the project folder (where pi --continue would find "newer"): exit 2, nothing on stdout.
    const here = process.cwd();
    process.chdir(cwd);
    try {
      const r = await runCli(["query", "t1"], { PI_CODING_AGENT_DIR: agent, PI_SESSION_FILE: gone, NO_COLOR: "1" });
      expect([r.code, r.stdout]).toEqual([2, ""]);
      expect(r.stderr).toBe(`error: $PI_SESSION_FILE names ${gone}, which does not exist; ${tail} name it with --session FILE|id\n`);
    } finally {
      process.chdir(here);
    }
  });

  it("query --session naming a moved file, run inside Pi: the error says $PI_SESSION_FILE holds the current session", async () => {
    const { agent, cwd } = world();
    const current = session(path.join(cwd, "here"), "current.jsonl", hdr("c", cwd), 1_700_000_100);
    const moved = path.join(cwd, "moved-away.jsonl");
    const r = await runCli(["query", "t1", "--session", moved], { PI_CODING_AGENT_DIR: agent, PI_SESSION_FILE: current, NO_COLOR: "1" });
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr).toBe(
      `error: ${moved}: no such file or directory, no glob match, and no session with that id in ${path.join(agent, "sessions")}. ` +
        `$PI_SESSION_FILE names ${current} (inside Pi: the current session); without --session condense query reads it\n`,
    );
  });

  it("no session found: the message says where condense looked and how each command takes a session", async () => {
    const { agent, cwd } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    const here = process.cwd();
    process.chdir(cwd);
    try {
      const head = `error: no session given, $PI_SESSION_FILE is not set, and ${dir} holds no Pi session of ${cwd} (the newest one there is what pi --continue opens); `;
      const query = await runCli(["query", "t1"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
      expect([query.code, query.stderr]).toEqual([2, `${head}name it with --session FILE|id\n`]);
      const metrics = await runCli(["metrics"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
      expect([metrics.code, metrics.stderr]).toEqual([2, `${head}pass a session file, directory, glob or session id\n`]);
      // The session typed as a ref (`condense query t1 big.jsonl`) is named as the --session it was meant to be.
      writeFileSync(path.join(cwd, "big.jsonl"), `${JSON.stringify(hdr("b", cwd))}\n`);
      mkdirSync(path.join(cwd, "d.jsonl"));
      const folder = await runCli(["query", "t1", "d.jsonl"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
      expect([folder.code, folder.stderr]).toEqual([2, `${head}name it with --session FILE|id\n`]);
      const typed = await runCli(["query", "t1", "big.jsonl"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
      expect([typed.code, typed.stderr]).toEqual([
        2,
        `${head}name it with --session FILE|id. big.jsonl is a file given as a ref: did you mean --session big.jsonl?\n`,
      ]);
    } finally {
      process.chdir(here);
    }
  });

  it("condense query without --session reads $PI_SESSION_FILE", async () => {
    const { cwd } = world();
    const file = path.join(cwd, "s.jsonl");
    const lines = [
      JSON.stringify(hdr("0f0000aa-0000-7000-8000-0000000000ab", cwd)),
      JSON.stringify({
        type: "message",
        id: "u1",
        parentId: null,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "user", content: "go", timestamp: 1767225601000 },
      }),
      JSON.stringify({
        type: "message",
        id: "a1",
        parentId: "u1",
        timestamp: "2026-01-01T00:00:02.000Z",
        message: {
          role: "assistant",
          content: [{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "seq 400" } }],
          api: "x",
          provider: "x",
          model: "x",
          usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
          stopReason: "toolUse",
          timestamp: 1767225602000,
        },
      }),
      JSON.stringify({
        type: "message",
        id: "r1",
        parentId: "a1",
        timestamp: "2026-01-01T00:00:03.000Z",
        message: {
          role: "toolResult",
          toolCallId: "call_1",
          toolName: "bash",
          content: [{ type: "text", text: Array.from({ length: 400 }, (_, i) => String(i + 1)).join("\n") }],
          isError: false,
          timestamp: 1767225603000,
        },
      }),
      JSON.stringify({
        type: "message",
        id: "u2",
        parentId: "r1",
        timestamp: "2026-01-01T00:00:04.000Z",
        message: { role: "user", content: "next", timestamp: 1767225604000 },
      }),
    ];
    writeFileSync(file, `${lines.join("\n")}\n`);
    expect((await runCli(["run", file, "--quiet"], { CONDENSE_NOW: "2026-01-01T01:00:00.000Z" })).code).toBe(0);
    const r = await runCli(["query", "t1", "--json"], { PI_SESSION_FILE: file });
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.session).toBe(file);
    expect(json.results[0].output).toBe(Array.from({ length: 400 }, (_, i) => String(i + 1)).join("\n"));
  });
});

describe("a session id that no file name carries: found by the id in the headers", () => {
  const STATUSLINE = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
  const STATUSLINE_ID = "019dce0b-879b-730d-99c2-d8ae04e716d2";

  it("--session 019dce0b finds kimchi-statusline.v3.jsonl in Pi's folder; an ambiguous prefix lists the matches", async () => {
    const { agent, cwd } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    mkdirSync(dir, { recursive: true });
    const renamed = path.join(dir, "kimchi-statusline.v3.jsonl");
    copyFileSync(STATUSLINE, renamed);
    // A Pi-named session of another id, which the file-name match looks at first.
    const piNamed = session(
      dir,
      "2026-01-01T00-00-00-000Z_0f0000aa-0000-7000-8000-0000000000ab.jsonl",
      hdr("0f0000aa-0000-7000-8000-0000000000ab", cwd),
      1_700_000_000,
    );
    const env = { PI_CODING_AGENT_DIR: agent };
    expect(await resolveSessionArgs(["019dce0b"], { cwd, env })).toEqual([renamed]);
    expect(await resolveSessionArgs([STATUSLINE_ID], { cwd, env })).toEqual([renamed]);
    expect(await resolveSessionArgs(["0f0000aa"], { cwd, env })).toEqual([piNamed]);
    // Through the command line: query opens that session (not yet run, so it has no refs).
    const r = await runCli(["query", "t999", "--session", "019dce0b"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
    expect(r.stderr).toBe(
      "error: unknown ref t999: no short ref t999 in this session's pruner index (nothing is indexed yet: run `condense run` on the session first)\n",
    );

    // Another session whose header id starts the same way: the prefix is ambiguous, the whole id is not.
    const other = session(path.join(dir, "sub"), "copy.jsonl", hdr("019dce0b-0000-7000-8000-000000000001", cwd), 1_700_000_000);
    await expect(resolveSessionArgs(["019dce0b"], { cwd, env })).rejects.toThrow(
      `019dce0b: session id prefix is ambiguous, 2 sessions match:\n  ${renamed}\n  ${other}`,
    );
    expect(await resolveSessionArgs([STATUSLINE_ID], { cwd, env })).toEqual([renamed]);
    await expect(resolveSessionArgs(["019dceff"], { cwd, env })).rejects.toThrow(
      `019dceff: no such file or directory, no glob match, and no session with that id in ${path.join(agent, "sessions")}`,
    );
  });
});

describe("ids in file names and in headers are one namespace", () => {
  it("a prefix one file matches by name and another by header is ambiguous; an exact header id beats a name prefix", async () => {
    const { agent, cwd } = world();
    const dir = path.join(agent, "sessions", cwdFolderName(cwd));
    const byName = session(
      dir,
      "2026-01-01T00-00-00-000Z_019d0001-0000-7000-8000-000000000001.jsonl",
      hdr("019d0001-0000-7000-8000-000000000001", cwd),
      1_700_000_000,
    );
    const byHeader = session(dir, "renamed.jsonl", hdr("019d", cwd), 1_700_000_100);
    const env = { PI_CODING_AGENT_DIR: agent };
    // "019d" is the whole id in renamed.jsonl's header: exact beats the other file's name prefix.
    expect(await resolveSessionArgs(["019d"], { cwd, env })).toEqual([byHeader]);
    const other = session(dir, "other.jsonl", hdr("019d0002-0000-7000-8000-000000000002", cwd), 1_700_000_200);
    await expect(resolveSessionArgs(["019d0"], { cwd, env })).rejects.toThrow(
      `019d0: session id prefix is ambiguous, 2 sessions match:\n  ${byName}\n  ${other}`,
    );
  });
});

describe("arguments that name no session", () => {
  it("an empty argument (an unset shell variable) is an error, not the current folder", async () => {
    const { cwd } = world();
    session(cwd, "a.jsonl", hdr("a", cwd), 1_700_000_000);
    await expect(resolveSessionArgs([""], { cwd, env: {} })).rejects.toThrow(
      "an empty session argument names no session (is a shell variable unset?); pass a session file, directory, glob or session id",
    );
    const r = await runCli(["metrics", ""], { NO_COLOR: "1" });
    expect(r.code).toBe(2);
  });

  it("condense's own records beside a session are never sessions, nor a glob's match of a --migrate backup", async () => {
    const { cwd } = world();
    const dir = path.join(cwd, "arch");
    const a = session(dir, "a.jsonl", hdr("a", cwd), 1_700_000_000);
    for (const f of ["a.jsonl.condense-undo", "a.jsonl.condense-journal", "a.jsonl.v1.bak"]) writeFileSync(path.join(dir, f), "{}\n");
    // As a shell expands `arch/a*`, and as condense expands the glob itself.
    const shell = ["a.jsonl", "a.jsonl.condense-journal", "a.jsonl.condense-undo"].map((f) => path.join(dir, f));
    expect(await resolveSessionArgs(shell, { cwd, env: {} })).toEqual([a]);
    expect(await resolveSessionArgs(["arch/a*"], { cwd, env: {} })).toEqual([a]);
    // A backup named on its own is what the user asked for.
    expect(await resolveSessionArgs([path.join(dir, "a.jsonl.v1.bak")], { cwd, env: {} })).toEqual([path.join(dir, "a.jsonl.v1.bak")]);
    await expect(resolveSessionArgs([path.join(dir, "a.jsonl.condense-undo")], { cwd, env: {} })).rejects.toThrow(
      "the arguments name only condense's own undo and journal records (*.condense-undo, *.condense-journal), no session; pass a session file, directory, glob or session id",
    );
  });

  it("a folder's symbolic links to session files are sessions; linked folders are not entered", () => {
    const { cwd } = world();
    const real = session(path.join(cwd, "store"), "a.jsonl", hdr("a", cwd), 1_700_000_000);
    const archive = path.join(cwd, "archive");
    mkdirSync(archive);
    symlinkSync(real, path.join(archive, "linked.jsonl"));
    symlinkSync(path.join(cwd, "store"), path.join(archive, "linked-folder"));
    symlinkSync(path.join(cwd, "missing.jsonl"), path.join(archive, "dangling.jsonl"));
    expect(jsonlFilesBelow(archive)).toEqual({ files: [path.join(archive, "linked.jsonl")], unlisted: [] });
  });

  it("a loop of symbolic links names no session in a folder; named itself, it cannot be read (ELOOP), and Pi's folder with one still finds ids", async () => {
    const { cwd, env } = world();
    const archive = path.join(cwd, "loops");
    const real = session(archive, "a.jsonl", hdr("0199c0de-aaaa", cwd), 1_700_000_000);
    symlinkSync(path.join(archive, "l2.jsonl"), path.join(archive, "l1.jsonl"));
    symlinkSync(path.join(archive, "l1.jsonl"), path.join(archive, "l2.jsonl"));
    expect(jsonlFilesBelow(archive)).toEqual({ files: [real], unlisted: [] });
    expect(await resolveSessionArgs(["loops"], { cwd, env: {} })).toEqual([real]);
    await expect(resolveSessionArgs(["loops/l1.jsonl"], { cwd, env: {} })).rejects.toThrow("loops/l1.jsonl: cannot read: a loop of symbolic links (ELOOP)");
    const sessions = path.join(env.PI_CODING_AGENT_DIR as string, "sessions");
    mkdirSync(sessions, { recursive: true });
    symlinkSync(path.join(sessions, "l2.jsonl"), path.join(sessions, "l1.jsonl"));
    symlinkSync(path.join(sessions, "l1.jsonl"), path.join(sessions, "l2.jsonl"));
    await expect(resolveSessionArgs(["typo.jsonl"], { cwd, env })).rejects.toThrow(
      `typo.jsonl: no such file or directory, no glob match, and no session with that id in ${sessions}`,
    );
  });
});
