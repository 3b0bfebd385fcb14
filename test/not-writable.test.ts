/**
 * A session this user cannot write (mode -r--r--r--, or a folder where the lock and journal cannot
 * be created): `run` and `compact` refuse before anything is written, saying so — not that the file
 * changed since it was read — exit 1, the bytes untouched, no lock or journal left; `--dry-run`
 * reports the same refusal (`wouldRefuse`); `undo` refuses the same way, saying nothing was changed,
 * and its `--dry-run` reports `wouldRefuse` too. Root ignores mode bits, so the command runs as `nobody`
 * (runuser) when the tests run as root; the error mapping of the append itself is tested directly.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendOpenError, FileChangedError, notWritableMessage } from "../src/session/writer.js";
import { buildCli } from "./built-cli.js";
import { copyInto, makeTempDir, REPO_ROOT, SHARED_SESSIONS } from "./helpers.js";

const KIMCHI = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
const HINT = "nothing was written — use --output FILE to write the result to another file";

describe("the append's open error", () => {
  it("EACCES, EPERM, EROFS: not writable (exit 1), naming the file; anything else: changed since it was read", () => {
    const cases: [string, string][] = [
      ["EACCES", "permission denied"],
      ["EPERM", "operation not permitted"],
      ["EROFS", "read-only file system"],
    ];
    for (const [code, why] of cases) {
      const error = appendOpenError("/s/a.jsonl", Object.assign(new Error(code), { code }));
      expect(error).not.toBeInstanceOf(FileChangedError);
      expect([error.message, error.exitCode]).toEqual([`/s/a.jsonl is not writable (${code}: ${why}); ${HINT}`, 1]);
    }
    const gone = appendOpenError("/s/a.jsonl", Object.assign(new Error("ENOENT"), { code: "ENOENT" }));
    expect(gone).toBeInstanceOf(FileChangedError);
    expect(gone.message).toBe("/s/a.jsonl changed since it was read (cannot be opened for appending: ENOENT); nothing was written — run again");
  });

  it("the folder's refusal names the folder and why it matters", () => {
    expect(notWritableMessage("/s/a.jsonl", "EACCES", "/s")).toBe(
      `/s/a.jsonl cannot be written: its folder /s is not writable (EACCES: permission denied), and condense keeps its lock and journal beside the session; ${HINT}`,
    );
    expect(notWritableMessage("/s/a.jsonl", undefined)).toBeNull();
    expect(notWritableMessage("/s/a.jsonl", "ENOSPC")).toBeNull();
  });
});

const isRoot = process.getuid?.() === 0;

/**
 * As root: whether `nobody` can run the checkout's CLI and reach the temporary folder (a checkout
 * under a private home folder, or a private $TMPDIR, keeps it out — then these cases cannot run).
 */
function nobodyCanRun(): boolean {
  if (spawnSync("runuser", ["--version"]).status !== 0) return false;
  const probe = makeTempDir("not-writable-probe");
  try {
    chmodSync(probe.dir, 0o755);
    const asNobody = (...args: string[]) => spawnSync("runuser", ["-u", "nobody", "--", ...args], { cwd: probe.dir }).status === 0;
    return asNobody("test", "-x", probe.dir) && asNobody(process.execPath, path.join(REPO_ROOT, "bin", "condense.js"), "--version");
  } finally {
    probe.cleanup();
  }
}

describe.skipIf(process.platform === "win32" || (isRoot && !nobodyCanRun()))("a read-only session, as a user who may not write it", () => {
  let cli: { bin: string; cleanup: () => void };
  const tmp = makeTempDir("not-writable");
  let n = 0;
  beforeAll(() => {
    cli = buildCli("not-writable");
    chmodSync(tmp.dir, 0o755);
  });
  afterAll(() => {
    cli?.cleanup();
    tmp.cleanup();
  });

  /** `condense <args>` as `nobody` when root (root may write any file), else as this user; hermetic Pi folder. */
  function condense(cwd: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
    return condenseWith({}, cwd, ...args);
  }

  /** {@link condense} with more environment variables (a fault point of the crash tests). */
  function condenseWith(extra: Record<string, string>, cwd: string, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
    const piDir = path.join(tmp.dir, `pi-${++n}`);
    mkdirSync(piDir, { mode: 0o777 });
    chmodSync(piDir, 0o777);
    const command = isRoot ? ["runuser", "-u", "nobody", "--", process.execPath, cli.bin, ...args] : [process.execPath, cli.bin, ...args];
    const env = { ...process.env, PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_NOW: "2026-01-01T00:00:00.000Z", ...extra };
    const r = spawnSync(command[0], command.slice(1), { cwd, env, encoding: "utf8" });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  /** A folder with a copy of KIMCHI: the copy `fileMode`, the folder `dirMode`. */
  function copy(fileMode: number, dirMode: number): { dir: string; file: string } {
    const dir = path.join(tmp.dir, `case-${++n}`);
    mkdirSync(dir);
    const file = copyInto(dir, KIMCHI, "ro.jsonl");
    chmodSync(file, fileMode);
    chmodSync(dir, dirMode);
    return { dir, file };
  }

  const cases = [
    {
      name: "the file is -r--r--r--",
      fileMode: 0o444,
      dirMode: 0o777,
      message: (file: string) => `${file} is not writable (EACCES: permission denied); ${HINT}`,
    },
    {
      name: "its folder is not writable",
      fileMode: 0o666,
      dirMode: 0o755,
      message: (file: string, dir: string) =>
        `${file} cannot be written: its folder ${dir} is not writable (EACCES: permission denied), and condense keeps its lock and journal beside the session; ${HINT}`,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: run, run --json and compact refuse (exit 1, same bytes, no lock or journal); --dry-run reports it`, () => {
      const { dir, file } = copy(c.fileMode, c.dirMode);
      const before = readFileSync(file);
      const expected = c.message(file, dir);
      for (const args of [["ro.jsonl"], ["compact", "ro.jsonl"]]) {
        const r = condense(dir, ...args);
        expect([r.code, r.stdout, r.stderr]).toEqual([1, "", `error: ${expected}\n`]);
      }
      const json = condense(dir, "ro.jsonl", "--json");
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout).failures).toEqual([{ session: file, error: expected }]);
      for (const args of [
        ["ro.jsonl", "--dry-run", "--json"],
        ["compact", "ro.jsonl", "--dry-run", "--json"],
      ]) {
        const dry = condense(dir, ...args);
        expect(dry.code, dry.stderr).toBe(0);
        expect(JSON.parse(dry.stdout).sessions[0].wouldRefuse).toBe(expected);
      }
      const dry = condense(dir, "ro.jsonl", "--dry-run");
      expect(dry.stderr).toContain(`warning: a real run would not write: ${expected}\n`);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(readdirSync(dir)).toEqual(["ro.jsonl"]);
    });
  }

  const undoCases = [
    {
      name: "the file is -r--r--r--",
      fileMode: 0o444,
      dirMode: 0o777,
      message: (file: string) => `${file} is not writable (EACCES: permission denied); nothing was changed`,
    },
    {
      name: "its folder is not writable",
      fileMode: 0o666,
      dirMode: 0o755,
      message: (file: string, dir: string) =>
        `${file} cannot be written: its folder ${dir} is not writable (EACCES: permission denied), and condense keeps its lock and journal beside the session; nothing was changed`,
    },
  ];
  for (const c of undoCases) {
    it(`${c.name} after a run: undo refuses before any lock (exit 1, same bytes); --dry-run says what it would remove and wouldRefuse`, () => {
      // Written in place while it could be (the undo record is this user's), then made read-only.
      const { dir, file } = copy(0o666, 0o777);
      const ran = condense(dir, "ro.jsonl", "--json");
      expect(ran.code, ran.stderr).toBe(0);
      const { entriesAppended, bytesAppended } = JSON.parse(ran.stdout).sessions[0];
      chmodSync(file, c.fileMode);
      chmodSync(dir, c.dirMode);
      const before = readFileSync(file);
      const expected = c.message(file, dir);
      expect(condense(dir, "undo", "ro.jsonl")).toEqual({ code: 1, stdout: "", stderr: `error: ${expected}\n` });
      const json = condense(dir, "undo", "ro.jsonl", "--json");
      expect([json.code, JSON.parse(json.stdout)]).toEqual([1, { error: { message: expected, exitCode: 1 } }]);
      const dryJson = condense(dir, "undo", "ro.jsonl", "--dry-run", "--json");
      expect(dryJson.code, dryJson.stderr).toBe(0);
      const doc = JSON.parse(dryJson.stdout);
      expect([doc.dryRun, doc.entries, doc.bytes, doc.sizeBefore, doc.wouldRefuse]).toEqual([true, entriesAppended, bytesAppended, before.length, expected]);
      // The write's time is the record's (the clock of the write, not CONDENSE_NOW).
      const at = `${new Date(doc.committedAt).toISOString().slice(0, 19).replace("T", " ")} UTC`;
      const n = (x: number) => x.toLocaleString("en-US");
      expect(condense(dir, "undo", "ro.jsonl", "--dry-run")).toEqual({
        code: 0,
        stdout:
          `would undo condense run of ${at} on ${file}: remove ${entriesAppended} entries ` +
          `(${n(bytesAppended)} bytes; ${n(before.length)} → ${n(before.length - bytesAppended)} bytes)\n`,
        stderr: `warning: a real undo would refuse: ${expected}\n`,
      });
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(readdirSync(dir)).toEqual(["ro.jsonl", "ro.jsonl.condense-undo"]);
    });
  }

  it("an interrupted write pending on a read-only session: undo --dry-run cannot say what undo would remove, and says why (exit 1, nothing changed)", () => {
    const { dir, file } = copy(0o666, 0o777);
    // Killed after appending, before committing: the journal stays beside the session.
    condenseWith({ CONDENSE_TEST_FAULT: "step:appended" }, dir, "ro.jsonl", "-q");
    expect(readdirSync(dir).sort()).toEqual(["ro.jsonl", "ro.jsonl.condense-journal", "ro.jsonl.lock"]);
    chmodSync(file, 0o444);
    const before = readFileSync(file);
    const expected =
      `${file} is not writable (EACCES: permission denied); nothing was changed, and a dry run cannot say what undo would remove: ` +
      `an interrupted condense run write is pending (${file}.condense-journal), and only settling it, which needs write access, decides which of its bytes stay`;
    expect(condense(dir, "undo", "ro.jsonl", "--dry-run")).toEqual({ code: 1, stdout: "", stderr: `error: ${expected}\n` });
    expect(condense(dir, "undo", "ro.jsonl")).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: ${file} is not writable (EACCES: permission denied); nothing was changed\n`,
    });
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(["ro.jsonl", "ro.jsonl.condense-journal", "ro.jsonl.lock"]);
  });

  it("a torn write pending on a read-only session: render, run --dry-run and run --output read it as before that write, saying so", () => {
    const { dir, file } = copy(0o666, 0o777);
    const original = readFileSync(file);
    condenseWith({ CONDENSE_TEST_FAULT: "append:5000" }, dir, "ro.jsonl", "-q");
    chmodSync(file, 0o444);
    const torn = readFileSync(file);
    expect(torn.length).toBe(original.length + 5000);
    const note =
      `${file}:113 (byte ${original.length}): its interrupted write cannot be settled here ` +
      `(EACCES: permission denied, open '${file}'); reading the session as it was before that write`;
    const dry = condense(dir, "ro.jsonl", "--dry-run", "--json");
    expect(dry.code, dry.stderr).toBe(0);
    const report = JSON.parse(dry.stdout).sessions[0];
    expect([report.warnings, report.wouldRefuse]).toEqual([[note], `${file} is not writable (EACCES: permission denied); ${HINT}`]);
    const render = condense(dir, "render", "ro.jsonl", "--stats");
    expect([render.code, render.stderr]).toEqual([0, `warning: ${note}\n`]);
    const out = path.join(dir, "out.jsonl");
    const written = condense(dir, "ro.jsonl", "--output", out, "--json");
    expect(written.code, written.stderr).toBe(0);
    const { bytesAppended } = JSON.parse(written.stdout).sessions[0];
    // The output is the bytes before the torn write, then condense's entries; the session is untouched.
    expect(readFileSync(out).subarray(0, original.length).equals(original)).toBe(true);
    expect(readFileSync(out).length).toBe(original.length + bytesAppended);
    expect(readFileSync(file).equals(torn)).toBe(true);
    // query says it too, terminal or not: what it can recover depends on it.
    const query = condense(dir, "query", "t1", "--session", "ro.jsonl");
    expect(query.stderr.split("\n")[0]).toBe(`warning: ${note}`);
    // A journal this user may not read (another user's): the whole file is read, and said so.
    if (isRoot) {
      chownSync(`${file}.condense-journal`, 0, 0);
      chmodSync(`${file}.condense-journal`, 0o600);
      const whole = condense(dir, "render", "ro.jsonl", "--stats");
      expect(whole.code, whole.stderr).toBe(0);
      expect(whole.stderr).toContain(
        `warning: ${file}:115 (byte ${torn.length}): its interrupted write cannot be settled here (EACCES: permission denied, open '${file}.condense-journal'), ` +
          `and its journal ${file}.condense-journal cannot be read (EACCES); reading the whole file, that write's bytes too\n`,
      );
      const dryUndo = condense(dir, "undo", "ro.jsonl", "--dry-run");
      expect(dryUndo.code).toBe(1);
      expect(dryUndo.stderr).toContain(`an interrupted condense write is pending (${file}.condense-journal)`);
    }
  });

  it("a folder this user may not list: naming it or a file in it says so (exit 2); in an archive it is one failure, the rest measured", () => {
    const dir = path.join(tmp.dir, `case-${++n}`);
    mkdirSync(path.join(dir, "arch", "ok"), { recursive: true });
    mkdirSync(path.join(dir, "arch", "priv"));
    const ok = copyInto(path.join(dir, "arch", "ok"), KIMCHI, "a.jsonl");
    copyInto(path.join(dir, "arch", "priv"), KIMCHI, "b.jsonl");
    const priv = path.join(dir, "arch", "priv");
    for (const d of [dir, path.join(dir, "arch"), path.join(dir, "arch", "ok")]) chmodSync(d, 0o755);
    chmodSync(priv, 0o000);
    try {
      const metrics = condense(dir, "metrics", "arch", "--json", "--quiet");
      expect(metrics.code).toBe(1);
      const doc = JSON.parse(metrics.stdout);
      expect(doc.sessions.map((s: { session: string }) => s.session)).toEqual([ok]);
      expect(doc.failures).toEqual([{ session: priv, error: `${priv}: cannot read: permission denied (EACCES)` }]);
      expect(condense(dir, "render", "arch/priv/b.jsonl")).toEqual({
        code: 2,
        stdout: "",
        stderr: "error: arch/priv/b.jsonl: cannot read: permission denied (EACCES)\n",
      });
      expect(condense(dir, "render", "arch/priv")).toEqual({
        code: 2,
        stdout: "",
        stderr: "error: arch/priv: cannot list the folder: permission denied (EACCES)\n",
      });
    } finally {
      chmodSync(priv, 0o755);
    }
  });

  it("--output writes elsewhere, the read-only session untouched", () => {
    const { dir, file } = copy(0o444, 0o777);
    const before = readFileSync(file);
    const out = path.join(dir, "out.jsonl");
    const r = condense(dir, "ro.jsonl", "--output", out, "-q");
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(out).subarray(0, before.length).equals(before)).toBe(true);
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
