/**
 * A session Pi (or another process) still has open is not written (issue 16): the `/proc` reading
 * on a made-up process tree; real processes — one holding the file open, a process titled `pi`
 * working in the session's folder, condense started inside Pi — refuse `run` and `compact` (exit 1,
 * bytes identical), `--dry-run` predicts it (exit 0, `wouldRefuse`), `--force` writes anyway; where
 * nothing can be checked a warning says so.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { cwdFolderName } from "../src/session/locate.js";
import { checkSessionOpen, describeProcess, isPiProcess, refusalMessage } from "../src/session/pi-running.js";
import { canListProcesses, ProcessTable, scanDescriptors } from "../src/session/processes.js";
import { runCli } from "./cli-harness.js";
import { makeTempDir, SHARED_SESSIONS } from "./helpers.js";
import { waitFor } from "./tty-support.js";

const SOURCE = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");

/** A copy of the shared session whose header names `cwd` as its folder. */
function sessionIn(file: string, cwd: string): string {
  const lines = readFileSync(SOURCE, "utf8").split("\n");
  lines[0] = JSON.stringify({ ...JSON.parse(lines[0]), cwd });
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, lines.join("\n"));
  return file;
}

/** A made-up `/proc` folder: processes with stat, comm, cwd, cmdline, environ and fd links. */
function fakeProc(
  root: string,
  bootSeconds: number,
  processes: { pid: number; comm: string; ppid: number; startTicks: number; cwd: string; argv?: string[]; env?: Record<string, string>; fds?: string[] }[],
) {
  mkdirSync(path.join(root, "self", "fd"), { recursive: true });
  writeFileSync(path.join(root, "stat"), `cpu  1 2 3\nbtime ${bootSeconds}\nprocesses 9\n`);
  for (const p of processes) {
    const dir = path.join(root, String(p.pid));
    mkdirSync(path.join(dir, "fd"), { recursive: true });
    // Fields after the name: state, ppid, then 17 more up to starttime (field 22).
    const rest = ["S", p.ppid, ...Array(17).fill(0), p.startTicks, 0, 0].join(" ");
    writeFileSync(path.join(dir, "stat"), `${p.pid} (${p.comm}) ${rest}\n`);
    writeFileSync(path.join(dir, "comm"), `${p.comm}\n`);
    writeFileSync(path.join(dir, "cmdline"), `${(p.argv ?? [p.comm]).join("\0")}\0`);
    writeFileSync(
      path.join(dir, "environ"),
      Object.entries(p.env ?? {})
        .map(([k, v]) => `${k}=${v}\0`)
        .join(""),
    );
    symlinkSync(p.cwd, path.join(dir, "cwd"));
    for (const [i, target] of (p.fds ?? []).entries()) symlinkSync(target, path.join(dir, "fd", String(i + 3)));
  }
}

describe("reading /proc (a made-up tree)", () => {
  const tmp = makeTempDir("fake-proc");
  afterAll(tmp.cleanup);
  const BOOT = 1_700_000_000; // seconds
  const proj = path.join(tmp.dir, "proj");
  const agent = path.join(tmp.dir, "agent");
  const sessions = path.join(agent, "sessions", cwdFolderName(proj));
  const older = sessionIn(path.join(sessions, "2026-01-01T00-00-00-000Z_a.jsonl"), proj);
  const latest = sessionIn(path.join(sessions, "2026-01-02T00-00-00-000Z_b.jsonl"), proj);
  mkdirSync(proj, { recursive: true });
  // Times: Pi 812 started at boot + 1000 s; the older session last changed before, the latest after.
  const piStart = (BOOT + 1000) * 1000;
  utimesSync(older, new Date(piStart - 60_000), new Date(piStart - 60_000));
  utimesSync(latest, new Date(piStart - 30_000), new Date(piStart - 30_000));
  const root = path.join(tmp.dir, "proc");
  fakeProc(root, BOOT, [
    { pid: 812, comm: "pi", ppid: 1, startTicks: 100_000, cwd: proj, env: { PI_CODING_AGENT_DIR: agent } },
    { pid: 900, comm: "tail (x) y", ppid: 812, startTicks: 50_000, cwd: "/", fds: [older, "/dev/null", "pipe:[1]"] },
    { pid: 901, comm: "node", ppid: 1, startTicks: 80_000, cwd: proj, argv: ["node", "/usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/cli.js"] },
    { pid: 902, comm: "node", ppid: 900, startTicks: 300_000, cwd: proj, argv: ["node", "server.js"] },
  ]);
  const facts = (file: string, mtimeMs: number) => ({ path: file, cwd: proj, mtimeMs });

  it("reads name, parent, start time, folder, arguments, environment and open files", () => {
    const table = new ProcessTable(root);
    expect(table.pids.sort()).toEqual([812, 900, 901, 902]);
    expect(table.info(900)).toEqual({ pid: 900, comm: "tail (x) y", ppid: 812, startedMs: (BOOT + 500) * 1000, cwd: "/", argv: ["tail (x) y"] });
    expect(table.environment(812)).toEqual({ PI_CODING_AGENT_DIR: agent });
    const fds = scanDescriptors(root);
    expect(fds.byTarget.get(older)).toEqual([900]);
    expect(fds.byTarget.get(latest)).toBeUndefined();
    expect(fds.byTarget.get("/dev/null")).toEqual([900]);
    expect([...fds.byTarget.keys()].some((k) => k.startsWith("pipe:"))).toBe(false);
    expect(table.ancestors(902).map((p) => p.pid)).toEqual([900, 812]);
    expect([812, 900, 901, 902].map((pid) => isPiProcess(table.info(pid) as NonNullable<ReturnType<ProcessTable["info"]>>))).toEqual([
      true,
      false,
      true,
      false,
    ]);
  });

  it("refuses: a file held open; a Pi in the session's folder that started before the last change, or whose latest session it is", async () => {
    // The older session is held open by 900; Pi 812 and 901 work in its folder. Its last change
    // came after 901 started (refused) but before 812 started, and it is not the latest session
    // there: 812 only warns.
    const heldOpen = await checkSessionOpen(facts(older, piStart - 60_000), { procRoot: root, env: {}, now: piStart + 60_000 });
    expect(heldOpen.checked).toBe(true);
    expect(heldOpen.refusals[0]).toBe(
      `it is open in another process (tail (x) y, pid 900, started ${new Date((BOOT + 500) * 1000).toTimeString().slice(0, 8)}, 9 min ago)`,
    );
    expect(heldOpen.refusals.slice(1)).toEqual([
      `Pi is running in ${proj} (node, pid 901, started ${new Date((BOOT + 800) * 1000).toTimeString().slice(0, 8)}, 4 min ago) and this session changed after that Pi started (2 min ago)`,
    ]);
    expect(heldOpen.warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^Pi is running in ${proj} \\(pi, pid 812, started .*\\); condense cannot tell which session it has open — if it is ${older} \\(or another one condense writes to now\\), exit Pi first`,
        ),
      ),
    ]);
    // The latest session of the folder (what `pi -c` opens, with Pi's own PI_CODING_AGENT_DIR).
    const latestCheck = await checkSessionOpen(facts(latest, piStart - 30_000), { procRoot: root, env: {}, now: piStart + 60_000 });
    expect(latestCheck.refusals[0]).toMatch(
      new RegExp(`^Pi is running in ${proj} \\(pi, pid 812, .*\\) and this is the latest session there \\(the one \`pi --continue\` opens\\)$`),
    );
    // Changed after Pi started.
    const changed = await checkSessionOpen(facts(older, piStart + 5_000), { procRoot: root, env: {}, now: piStart + 65_000 });
    expect(changed.refusals).toContain(
      `Pi is running in ${proj} (pi, pid 812, started ${new Date(piStart).toTimeString().slice(0, 8)}, 65 s ago) and this session changed after that Pi started (60 s ago)`,
    );
    expect(refusalMessage(older, changed)).toMatch(
      /; Pi's next message would leave condense's entries off the active branch; nothing was written — exit Pi first, or pass --force$/,
    );
    // The same change made by condense itself (its undo record ends at the file's size) says
    // nothing about Pi; a Pi already warned about is not warned about again.
    const ours = await checkSessionOpen({ ...facts(older, piStart + 5_000), lastChangeByCondense: true }, { procRoot: root, env: {}, now: piStart + 65_000 });
    expect(ours.refusals).toEqual([expect.stringMatching(/^it is open in another process \(tail/)]);
    expect(ours.warnings).toEqual([
      expect.stringMatching(new RegExp(`^Pi is running in ${proj} \\(node, pid 901, .*condense cannot tell which session it has open`)),
    ]);
    // Another folder: nothing about Pi.
    const elsewhere = await checkSessionOpen({ path: latest, cwd: tmp.dir, mtimeMs: piStart + 5_000 }, { procRoot: root, env: {} });
    expect(elsewhere).toEqual({ checked: true, refusals: [], warnings: [], insidePi: false, byPi: false });
  });

  it("another condense is named as condense, not by its kernel name node", () => {
    const at = Date.UTC(2026, 0, 1, 12, 0, 0);
    const p = (comm: string, argv: string[]) => ({ pid: 4410, comm, ppid: 1, startedMs: at, cwd: "/", argv });
    const when = `started ${new Date(at).toTimeString().slice(0, 8)}, 30 s ago`;
    expect(describeProcess(p("node", ["node", "/usr/lib/node_modules/condense-cli/bin/condense.js", "run", "s.jsonl"]), at + 30_000)).toBe(
      `condense (node), pid 4410, ${when}`,
    );
    expect(describeProcess(p("node", ["node", "/usr/local/bin/condense", "s.jsonl"]), at + 30_000)).toBe(`condense (node), pid 4410, ${when}`);
    expect(describeProcess(p("node", ["node", "--enable-source-maps", "bin/condense.js"]), at + 30_000)).toBe(`condense (node), pid 4410, ${when}`);
    // A session file named condense, or another program: the kernel's name.
    expect(describeProcess(p("node", ["node", "server.js", "condense"]), at + 30_000)).toBe(`node, pid 4410, ${when}`);
    expect(describeProcess(p("tail", ["tail", "-f", "condense"]), at + 30_000)).toBe(`tail, pid 4410, ${when}`);
  });

  it("inside Pi ($PI_SESSION_FILE names the session): refused, with --output as the way out; no /proc: a warning, once", async () => {
    const inside = await checkSessionOpen({ path: latest, cwd: null, mtimeMs: 0 }, { procRoot: root, env: { PI_SESSION_FILE: latest } });
    expect(inside.refusals).toEqual(["condense runs inside Pi, and this is the session that Pi has open ($PI_SESSION_FILE)"]);
    expect(refusalMessage(latest, inside)).toMatch(/nothing was written — write a copy with --output, or run condense after Pi has exited$/);
    const none = path.join(tmp.dir, "no-proc");
    mkdirSync(none);
    expect(canListProcesses(none)).toBe(false);
    const first = await checkSessionOpen({ path: latest, cwd: proj, mtimeMs: 0 }, { procRoot: none, env: {}, platform: "darwin" });
    expect(first).toEqual({
      checked: false,
      refusals: [],
      warnings: ["cannot check on darwin whether Pi or another process has a session open; exit Pi before condense writes to its session"],
      insidePi: false,
      byPi: false,
    });
    const second = await checkSessionOpen({ path: older, cwd: proj, mtimeMs: 0 }, { procRoot: none, env: {}, platform: "darwin" });
    expect(second.warnings).toEqual([]);
  });
});

describe.skipIf(!canListProcesses())("real processes", () => {
  const tmp = makeTempDir("pi-open");
  const proj = path.join(tmp.dir, "proj");
  mkdirSync(proj);
  const children: ChildProcess[] = [];
  let env: Record<string, string>;
  beforeAll(() => {
    writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    env = { PI_CODING_AGENT_DIR: tmp.dir, NO_COLOR: "1" };
  });
  afterEach(() => {
    for (const c of children.splice(0)) c.kill("SIGKILL");
  });
  afterAll(tmp.cleanup);

  /** A node process running `code`, in `cwd`; resolves once it printed "ready". */
  async function startNode(code: string, cwd: string): Promise<ChildProcess> {
    const child = spawn(process.execPath, ["-e", code], { cwd, stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    let out = "";
    child.stdout?.on("data", (d) => (out += d));
    await waitFor("the child", () => out.includes("ready"), 10_000);
    return child;
  }

  it("a second process holding the file open: run and compact refuse (exit 1, bytes identical); --dry-run predicts; --force writes", async () => {
    const file = sessionIn(path.join(tmp.dir, "held.jsonl"), path.join(tmp.dir, "elsewhere"));
    const before = readFileSync(file);
    const holder = await startNode(`require("fs").openSync(${JSON.stringify(file)}, "r"); console.log("ready"); setInterval(() => {}, 1000);`, tmp.dir);
    const expected = new RegExp(
      `^${file}: it is open in another process \\(node, pid ${holder.pid}, started \\d\\d:\\d\\d:\\d\\d, \\d+ s ago\\); condense writes only to a session nothing else has open; nothing was written — close it first, or pass --force$`,
    );
    for (const args of [
      ["run", file],
      ["compact", file, "--keep-recent-tokens", "400"],
    ]) {
      const r = await runCli(args, env);
      expect(r.code, args[0]).toBe(1);
      expect(r.stderr.replace(/^error: /, "").trim()).toMatch(expected);
      expect(readFileSync(file).equals(before)).toBe(true);
    }
    const dry = await runCli(["run", file, "--dry-run", "--json"], env);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).sessions[0].wouldRefuse).toMatch(expected);
    const dryHuman = await runCli(["compact", file, "--dry-run", "--keep-recent-tokens", "400"], env);
    expect(dryHuman.code).toBe(0);
    expect(dryHuman.stderr).toMatch(/^warning: a real run would not write: .*it is open in another process/m);
    const forced = await runCli(["run", file, "--force"], env);
    expect(forced.code).toBe(0);
    expect(readFileSync(file).length).toBeGreaterThan(before.length);
  });

  it("a held-open session with nothing to append: run writes nothing and exits 0, as --dry-run says; with something to append it still refuses", async () => {
    const file = sessionIn(path.join(tmp.dir, "held-done.jsonl"), path.join(tmp.dir, "elsewhere"));
    expect((await runCli(["run", file], env)).code).toBe(0);
    const condensed = readFileSync(file);
    // The open-file scan of that run is reused for a second (pi-running.ts descriptorMap): let it expire.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await startNode(`require("fs").openSync(${JSON.stringify(file)}, "r"); console.log("ready"); setInterval(() => {}, 1000);`, tmp.dir);
    const r = await runCli(["run", file], env);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toContain(
      `nothing was written: the session file is unchanged\n${file}: nothing to write for stock Pi (target pi: pi-condense is switched on in ${tmp.dir}/settings.json but does not look installed)\n`,
    );
    expect(readFileSync(file).equals(condensed)).toBe(true);
    const json = await runCli(["run", file, "--json"], env);
    expect([json.code, JSON.parse(json.stdout).sessions[0].written, JSON.parse(json.stdout).sessions[0].wouldRefuse]).toEqual([0, null, undefined]);
    const dry = await runCli(["run", file, "--dry-run", "--json"], env);
    expect([dry.code, JSON.parse(dry.stdout).sessions[0].wouldRefuse]).toEqual([0, undefined]);
    // Something to append (the same session before its run): refused as before.
    const fresh = sessionIn(path.join(tmp.dir, "held-fresh.jsonl"), path.join(tmp.dir, "elsewhere"));
    const before = readFileSync(fresh);
    const other = await startNode(`require("fs").openSync(${JSON.stringify(fresh)}, "r"); console.log("ready"); setInterval(() => {}, 1000);`, tmp.dir);
    const refused = await runCli(["run", fresh], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error: ${fresh}: it is open in another process (node, pid ${other.pid}`);
    expect(readFileSync(fresh).equals(before)).toBe(true);
  });

  it("a process titled pi working in the session's folder, started before the session's last change: refused; once it has exited: written", async () => {
    const file = sessionIn(path.join(tmp.dir, "pi.jsonl"), proj);
    const pi = await startNode(`process.title = "pi"; console.log("ready"); setInterval(() => {}, 1000);`, proj);
    writeFileSync(file, readFileSync(file)); // Pi "wrote" it after starting
    const before = readFileSync(file);
    const r = await runCli(["run", file], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^error: ${file}: Pi is running in ${proj} \\(pi, pid ${pi.pid}, started .*\\) and this session changed after that Pi started \\(\\d+ s ago\\); Pi's next message would leave condense's entries off the active branch; nothing was written — exit Pi first, or pass --force\\n$`,
      ),
    );
    expect(readFileSync(file).equals(before)).toBe(true);
    const dry = await runCli(["compact", file, "--dry-run", "--json", "--keep-recent-tokens", "400"], env);
    expect(JSON.parse(dry.stdout).sessions[0].wouldRefuse).toContain(`Pi is running in ${proj} (pi, pid ${pi.pid}`);
    pi.kill("SIGKILL");
    await new Promise((resolve) => pi.once("exit", resolve));
    const after = await runCli(["run", file], env);
    expect(after.code).toBe(0);
    expect(readFileSync(file).length).toBeGreaterThan(before.length);
  });

  it("inside Pi, on Pi's own session ($PI_SESSION_FILE): refused; --output writes a copy", async () => {
    const file = sessionIn(path.join(tmp.dir, "inside.jsonl"), proj);
    const before = readFileSync(file);
    const r = await runCli(["run"], { ...env, PI_SESSION_FILE: file, PI_CODING_AGENT: "true" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}: condense runs inside Pi, and this is the session that Pi has open ($PI_SESSION_FILE)`);
    expect(readFileSync(file).equals(before)).toBe(true);
    const copy = path.join(tmp.dir, "inside-copy.jsonl");
    const out = await runCli(["run", "--output", copy], { ...env, PI_SESSION_FILE: file, PI_CODING_AGENT: "true" });
    expect(out.code).toBe(0);
    expect(readFileSync(copy).subarray(0, before.length).equals(before)).toBe(true);
  });
});
