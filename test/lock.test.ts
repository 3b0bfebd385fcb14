/**
 * The session lock (src/session/lock.ts): a lock left by a dead process (pid gone, or reused by a
 * later process) is taken over at once; a live holder is named with its pid and since when; a lock
 * without an owner record is left alone while fresh and taken after 30 s without refresh; a lost
 * lock is reported before anything is written, without a stack trace; temporaries of dead writers
 * are removed by the next run.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireSessionLock, currentOwner, type LockOwner, processStartTicks } from "../src/session/lock.js";
import { loadSession } from "../src/session/session.js";
import { appendEntries, chainEntries, FileLockedError } from "../src/session/writer.js";
import { runCli } from "./cli-capture.js";
import { copyInto, FIXTURES, makeTempDir } from "./helpers.js";

const NOW = "2026-02-01T12:00:00.000Z";
let tmp: ReturnType<typeof makeTempDir>;
let seq = 0;
beforeAll(() => {
  tmp = makeTempDir("lock");
});
afterAll(() => tmp?.cleanup());

const fresh = () => copyInto(tmp.dir, path.join(FIXTURES, "branched.jsonl"), `${++seq}.jsonl`);

/** A lock folder as proper-lockfile makes it, with an owner record. */
function plantLock(file: string, owner: Partial<LockOwner> | null, ageMs = 0): void {
  const dir = `${file}.lock`;
  mkdirSync(dir);
  if (owner) writeFileSync(path.join(dir, "owner.json"), JSON.stringify({ ...currentOwner("run"), ...owner }));
  const t = new Date(Date.now() - ageMs);
  utimesSync(dir, t, t);
}

async function appendOne(file: string) {
  const session = await loadSession(file);
  const entries = chainEntries(session, [{ type: "custom", customType: "pi-condense", data: { n: 1 } }], NOW);
  return appendEntries(session, entries).catch((e: unknown) => e);
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(r.stdout);
}

describe("stale locks", () => {
  it("a lock whose owner died is taken over at once, and the append goes through", async () => {
    const file = fresh();
    plantLock(file, { pid: deadPid(), startTicks: 1 });
    const started = Date.now();
    expect(typeof (await appendOne(file))).toBe("number");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(readdirSync(tmp.dir).filter((n) => n.startsWith(`${seq}.jsonl.lock`))).toEqual([]);
  });

  it("a lock whose pid was reused by a later process (other start time) is taken over", async () => {
    const file = fresh();
    const ticks = processStartTicks(process.ppid);
    plantLock(file, { pid: process.ppid, startTicks: (ticks ?? 0) + 12345 });
    expect(typeof (await appendOne(file))).toBe("number");
  });

  it("a live holder is named: command, pid and since when; nothing written", async () => {
    const file = fresh();
    const before = readFileSync(file);
    const sleeper = spawn(process.execPath, ["-e", "setTimeout(() => {}, 20000)"], { stdio: "ignore" });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const pid = sleeper.pid ?? 0;
      const since = new Date(Date.now() - 75_000).toISOString();
      plantLock(file, { pid, startTicks: processStartTicks(pid), command: "run", since });
      const error = await appendOne(file);
      expect(error).toBeInstanceOf(FileLockedError);
      const hhmmss = new Date(Date.parse(since)).toTimeString().slice(0, 8);
      // The writer waits up to a second for the holder before it gives up.
      expect((error as Error).message).toMatch(
        new RegExp(
          `^.*/${seq}\\.jsonl is locked by condense run \\(pid ${pid}, since ${hhmmss}, 7[5-9] s ago\\) — wait for it, or stop that process; nothing was written$`,
        ),
      );
      expect(readFileSync(file).equals(before)).toBe(true);
    } finally {
      sleeper.kill("SIGKILL");
    }
    await new Promise((r) => sleeper.once("exit", r));
    // Its owner is gone now: the next run takes the lock at once.
    expect(typeof (await appendOne(file))).toBe("number");
  });

  it("an owner on another host is left alone while fresh, taken after 30 s without refresh", async () => {
    const file = fresh();
    plantLock(file, { pid: 1, host: `not-${hostname()}` });
    const error = await appendOne(file);
    expect(error).toBeInstanceOf(FileLockedError);
    expect((error as Error).message).toContain(`condense run on host not-${hostname()} (pid 1)`);
    utimesSync(`${file}.lock`, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    expect(typeof (await appendOne(file))).toBe("number");
  });

  it("any command removes a lock left by a dead condense (no journal)", async () => {
    const file = fresh();
    plantLock(file, { pid: deadPid(), startTicks: 1 });
    const r = await runCli("render", file);
    expect(r.code).toBe(0);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});

describe("a lost lock", () => {
  it("is reported by assertHeld as a plain error (no stack trace), and release does not throw", async () => {
    const file = fresh();
    const lock = await acquireSessionLock(file, "run");
    const owner = JSON.parse(readFileSync(`${file}.lock/owner.json`, "utf8"));
    expect([owner.pid, owner.command, owner.host]).toEqual([process.pid, "run", hostname()]);
    // Someone removed it (or took it over) while we worked.
    spawnSync("rm", ["-rf", `${file}.lock`]);
    mkdirSync(`${file}.lock`);
    expect(() => lock.assertHeld()).toThrow(
      `${file}: lost the lock while working (the lock folder was removed or taken over); nothing was written — run again`,
    );
    await lock.release();
    // The other holder's lock stays.
    expect(existsSync(`${file}.lock`)).toBe(true);
  });
});

describe("temporaries of dead writers", () => {
  it("a sidecar temporary of a dead process is removed by the next run that writes sidecars", async () => {
    const { dir, cleanup } = makeTempDir("lock-tmp");
    try {
      const file = path.join(dir, "spill.jsonl");
      const { writeSession } = await import("./render-support.js");
      writeSession(file, [`${"row\n".repeat(30_000)}`]);
      const blobs = path.join(dir, "0f0000aa-0000-7000-8000-0000000000aa-blobs");
      mkdirSync(blobs);
      const stale = path.join(blobs, `.bash_0_1767225603000.txt.${deadPid()}.123456.tmp`);
      const live = path.join(blobs, `.other.txt.${process.pid}.1.tmp`);
      writeFileSync(stale, "half");
      writeFileSync(live, "in progress");
      writeFileSync(`${file}.condense-journal.tmp`, "half a journal");
      expect((await runCli("run", file, "--quiet")).code).toBe(0);
      expect(readdirSync(blobs).sort()).toEqual([path.basename(live), "bash_0_1767225603000.txt"].sort());
      expect(existsSync(`${file}.condense-journal.tmp`)).toBe(false);
    } finally {
      cleanup();
    }
  });
});
