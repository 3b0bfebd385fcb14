/**
 * The session lock: `proper-lockfile`'s `<realpath>.lock` folder (mkdir is the atomic step; the
 * holder refreshes its mtime), plus an owner record `owner.json` inside it — pid, process start
 * time (Linux: `/proc/<pid>/stat` field 22), boot id, host, command and since when — so that a lock
 * left by a killed run is taken over at once, and a live holder is named in the refusal.
 *
 * Rules (docs/design.md §5; issue "Crash-proof"): a lock whose owner is dead (same host; another
 * boot, no such pid, or a pid reused by a process that started later) is renamed aside and removed,
 * then taken; a lock of unknown owner (another host, an older condense) only after 30 s without
 * refresh; a live owner → {@link FileLockedError} naming it. A lock lost while held (removed or
 * taken over by someone else) never throws from a timer: {@link SessionLock.assertHeld} reports it
 * before anything is written.
 */
import { randomBytes } from "node:crypto";
import { lstatSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { CondenseError } from "../util/errors.js";
import { readRegularFileSync } from "../util/files.js";

/** A lock without refresh for this long is abandoned (proper-lockfile's `stale`, ms). */
const STALE_MS = 30_000;
const OWNER_FILE = "owner.json";

/** Who holds a lock. */
export interface LockOwner {
  pid: number;
  /** Start time of `pid` in clock ticks since boot (Linux), or null elsewhere. */
  startTicks: number | null;
  bootId: string | null;
  host: string;
  command: string;
  /** ISO time the lock was taken. */
  since: string;
}

/** Thrown when another live process holds the session's lock; nothing was written (exit 1). */
export class FileLockedError extends CondenseError {
  constructor(
    readonly path: string,
    detail = "is locked by another process (is Pi or another condense writing it?)",
  ) {
    super(`${path} ${detail}; nothing was written`, 1);
    this.name = "FileLockedError";
  }
}

/** A held lock. */
export interface SessionLock {
  /** The locked file (a real path). */
  readonly path: string;
  /** @throws CondenseError (exit 1) when the lock was lost (removed or taken over) since it was taken */
  assertHeld(): void;
  /** Remove the owner record, then the lock folder. Never throws. */
  release(): Promise<void>;
}

/** Start time of a process in clock ticks since boot (field 22 of `/proc/<pid>/stat`), or null. */
export function processStartTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: fields after the last ")" start at 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

/** This process as a lock owner. */
export function currentOwner(command: string): LockOwner {
  return {
    pid: process.pid,
    startTicks: processStartTicks(process.pid),
    bootId: bootId(),
    host: hostname(),
    command,
    since: new Date().toISOString(),
  };
}

/**
 * Whether the process that wrote an owner record still runs: `unknown` for another host or a
 * record that cannot be read.
 */
export function ownerState(owner: LockOwner | null): "alive" | "dead" | "unknown" {
  if (!owner || typeof owner.pid !== "number" || owner.host !== hostname()) return "unknown";
  if (owner.pid === process.pid) return "alive";
  const boot = bootId();
  if (boot !== null && owner.bootId !== null) {
    if (owner.bootId !== boot) return "dead";
    const ticks = processStartTicks(owner.pid);
    return ticks === null || ticks !== owner.startTicks ? "dead" : "alive";
  }
  try {
    process.kill(owner.pid, 0);
    return "alive";
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH" ? "dead" : "alive";
  }
}

/** True when `pid` is not a running process (ESRCH). Used for temporaries named with a pid. */
export function pidIsDead(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

function readOwner(lockDir: string): LockOwner | null {
  try {
    const value = JSON.parse(readRegularFileSync(`${lockDir}/${OWNER_FILE}`, "utf8")); // a FIFO: not waited on
    return value && typeof value === "object" ? (value as LockOwner) : null;
  } catch {
    return null;
  }
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/** The refusal for a lock held by someone alive (or unknown and fresh). */
function lockedError(path: string, lockDir: string, owner: LockOwner | null): FileLockedError {
  if (owner && ownerState(owner) === "alive") {
    const since = Date.parse(owner.since);
    const when = Number.isNaN(since) ? "" : `, since ${new Date(since).toTimeString().slice(0, 8)}, ${ago(Date.now() - since)}`;
    return new FileLockedError(path, `is locked by condense ${owner.command} (pid ${owner.pid}${when}) — wait for it, or stop that process`);
  }
  let refreshed = "";
  try {
    refreshed = `, refreshed ${ago(Date.now() - statSync(lockDir).mtimeMs)}`;
  } catch {
    // removed meanwhile
  }
  const who = owner
    ? `condense ${owner.command} on host ${owner.host} (pid ${owner.pid})`
    : "owner unknown: another machine, Pi's tooling or an older condense";
  return new FileLockedError(
    path,
    `is locked (lock folder ${lockDir}${refreshed}; ${who}); it is taken as abandoned after ${STALE_MS / 1000} s without refresh`,
  );
}

/**
 * Move an abandoned lock folder aside and delete it. The rename is atomic; when the folder moved
 * aside is not the one inspected (someone took the lock meanwhile), it is put back.
 * @returns true when the lock was removed
 */
function takeOver(lockDir: string, inspectedIno: number): boolean {
  const aside = `${lockDir}.abandoned-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    renameSync(lockDir, aside);
  } catch {
    return false; // someone else removed or took it: just retry
  }
  if (lstatSync(aside).ino !== inspectedIno) {
    try {
      renameSync(aside, lockDir);
    } catch {
      rmSync(aside, { recursive: true, force: true });
    }
    return false;
  }
  rmSync(aside, { recursive: true, force: true });
  return true;
}

/** What to do about an existing lock folder: take it over now, wait, or refuse. */
function inspect(lockDir: string): { action: "take"; ino: number } | { action: "wait"; owner: LockOwner | null } {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(lockDir);
  } catch {
    return { action: "wait", owner: null }; // gone meanwhile: retry at once
  }
  const owner = readOwner(lockDir);
  const state = ownerState(owner);
  if (state === "dead") return { action: "take", ino: st.ino };
  // Unknown owners: proper-lockfile's rule (no refresh for STALE_MS); its own removal cannot
  // delete a folder holding an owner record, so it is done here.
  if (state === "unknown" && st.mtimeMs < Date.now() - STALE_MS) return { action: "take", ino: st.ino };
  return { action: "wait", owner };
}

/**
 * Take the lock of `path` (a real path), recording this process as its owner.
 * @param command shown to whoever finds the lock taken (`run`, `recover`, …)
 * @param waitMs how long to keep retrying while a live process holds it
 * @throws FileLockedError naming the holder; NodeJS.ErrnoException when the folder cannot be created (EACCES, EROFS)
 */
export async function acquireSessionLock(path: string, command: string, waitMs = 1_000): Promise<SessionLock> {
  const { default: lockfile } = await import("proper-lockfile");
  const lockDir = `${path}.lock`;
  const deadline = Date.now() + waitMs;
  let compromised: Error | null = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const release = await lockfile.lock(path, {
        realpath: false,
        stale: STALE_MS,
        retries: 0,
        onCompromised: (error) => {
          compromised = error;
        },
      });
      writeOwner(lockDir, currentOwner(command));
      return heldLock(path, lockDir, release, () => compromised);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ELOCKED" && code !== "ENOTEMPTY") throw error;
      const seen = inspect(lockDir);
      if (seen.action === "take") {
        takeOver(lockDir, seen.ino);
        continue;
      }
      if (Date.now() >= deadline || attempt > 200) throw lockedError(path, lockDir, seen.owner);
      await new Promise((r) => setTimeout(r, Math.min(100, 10 * (attempt + 1))));
    }
  }
}

/** Write the owner record without disturbing the mtime proper-lockfile uses to know the lock is its own. */
function writeOwner(lockDir: string, owner: LockOwner): void {
  const before = statSync(lockDir);
  const tmp = `${lockDir}/.${OWNER_FILE}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(owner)}\n`, { mode: 0o600 });
  renameSync(tmp, `${lockDir}/${OWNER_FILE}`);
  utimesSync(lockDir, before.atime, before.mtime);
}

function heldLock(path: string, lockDir: string, release: () => Promise<void>, lost: () => Error | null): SessionLock {
  const ino = lstatSync(lockDir).ino;
  const stillOurs = (): boolean => {
    try {
      return lstatSync(lockDir).ino === ino && readOwner(lockDir)?.pid === process.pid;
    } catch {
      return false;
    }
  };
  return {
    path,
    assertHeld() {
      const error = lost();
      if (error || !stillOurs()) {
        throw new CondenseError(
          `${path}: lost the lock while working (${error?.message ?? "the lock folder was removed or taken over"}); nothing was written — run again`,
          1,
        );
      }
    },
    async release() {
      // A lock that is no longer ours (removed, taken over) is left to its new holder: proper-lockfile
      // would rmdir the folder by name, and its own refresh then finds the lock compromised.
      if (lost() || !stillOurs()) return;
      try {
        unlinkSync(`${lockDir}/${OWNER_FILE}`);
      } catch {
        // already gone
      }
      await release().catch(() => undefined);
    },
  };
}

/**
 * Run `work` holding the lock of `path` (a real path).
 * @throws FileLockedError when a live process holds it
 */
export async function withSessionLock<T>(path: string, work: (lock: SessionLock) => Promise<T>, command = "run"): Promise<T> {
  const lock = await acquireSessionLock(path, command);
  try {
    return await work(lock);
  } finally {
    await lock.release();
  }
}
