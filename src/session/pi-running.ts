/**
 * "Is something working on this session right now?" — asked before a write (issue 16 "work silently
 * lost when Pi still has the session open"). Pi 1.6 keeps the session in memory and appends each new
 * entry by path (`appendFileSync`, no descriptor kept open), as a child of its in-memory leaf: what
 * condense appends meanwhile ends up off the active branch at Pi's next message. So:
 *
 * 1. Any other process holding the file open (`/proc/<pid>/fd`: `tail -f`, an editor, a backup, a
 *    tool of the user's) — refused.
 * 2. condense started by Pi itself (its bash tool names the current session in `$PI_SESSION_FILE`)
 *    on that very session — refused.
 * 3. A Pi process — `comm` `pi` or `pi-rpc` (Pi sets `process.title`), or a node/bun process
 *    running pi-coding-agent whose title could not be set — whose working folder is the session's
 *    `cwd` (its header), and either the session changed after that Pi started (unless that change
 *    was condense's own last write), or it is the latest session of that folder (the one `pi -c`
 *    opens, found with that Pi's own environment) — refused.
 * 4. A Pi process in the session's folder that meets neither condition — a warning: Pi overwrites its
 *    arguments with its title, so which session it has open cannot be read back.
 *
 * Everything else is allowed. Where `/proc` does not exist (macOS, Windows), nothing can be checked:
 * a warning says so. What is refused can be written anyway with `--force`.
 */
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { latestSessionFor } from "./locate.js";
import { canListProcesses, type DescriptorMap, type ProcessInfo, ProcessTable, scanDescriptors } from "./processes.js";

/** What the check found for one session. */
export interface OpenCheck {
  /** False where processes cannot be listed: nothing was checked. */
  checked: boolean;
  /** Why a write must not happen now, one clause each (empty: nothing against it); see {@link refusalMessage}. */
  refusals: string[];
  /** What the user should know but does not stop the write. */
  warnings: string[];
  /** condense runs inside the Pi that has this session open. */
  insidePi: boolean;
  /** A refusal names Pi (not only other processes holding the file). */
  byPi: boolean;
}

/**
 * The message of a refusal: `<path>: <clauses joined by "; ">; <what Pi would do>; nothing was
 * written — <the way out>`.
 */
export function refusalMessage(path: string, check: Pick<OpenCheck, "refusals" | "insidePi" | "byPi">): string {
  const consequence = check.byPi
    ? "Pi's next message would leave condense's entries off the active branch"
    : "condense writes only to a session nothing else has open";
  const way = check.insidePi
    ? "write a copy with --output, or run condense after Pi has exited"
    : check.byPi
      ? "exit Pi first, or pass --force"
      : "close it first, or pass --force";
  return `${path}: ${check.refusals.join("; ")}; ${consequence}; nothing was written — ${way}`;
}

/** The session facts the check needs. */
export interface SessionFacts {
  /** The file (a symlink is resolved here). */
  path: string;
  /** The header's `cwd`, when it has one. */
  cwd: string | null;
  /** Modification time, epoch ms. */
  mtimeMs: number;
  /** The last change was condense's own write (its undo record ends at the file's size): it says nothing about Pi. */
  lastChangeByCondense?: boolean;
}

let platformWarned = false;
const warnedPis = new Set<number>();

/** How long a scan of the open files is reused for the next file of the same command (ms). */
const DESCRIPTORS_MS = 1000;
let descriptors: { map: DescriptorMap; at: number; root: string } | null = null;

/**
 * Who holds which file open: one scan serves the files of an archive checked within a second
 * (it costs about 5 µs per open descriptor on the machine); `fresh` scans again.
 */
function descriptorMap(root: string, fresh: boolean): DescriptorMap {
  const now = Date.now();
  if (!fresh && descriptors && descriptors.root === root && now - descriptors.at < DESCRIPTORS_MS) return descriptors.map;
  const map = scanDescriptors(root);
  descriptors = { map, at: now, root };
  return map;
}

/** False for a process whose name rules Pi out (see {@link isPiProcess}). */
function mayBePi(comm: string): boolean {
  return comm === "pi" || comm === "pi-rpc" || /^(node|bun)/.test(comm);
}

/** True for a Pi process: titled `pi` / `pi-rpc`, or node/bun running pi-coding-agent. */
export function isPiProcess(p: ProcessInfo): boolean {
  if (p.comm === "pi" || p.comm === "pi-rpc") return true;
  if (!/^(node|bun)/.test(p.comm)) return false;
  return p.argv.some((a) => a.includes("pi-coding-agent"));
}

/**
 * True for another condense: node/bun running condense's bin (`…/bin/condense.js`, or the
 * `condense` link npm installs on the PATH) — its kernel name alone would say only `node`.
 */
export function isCondenseProcess(p: ProcessInfo): boolean {
  const script = p.argv.slice(1).find((a) => !a.startsWith("-")); // the first argument that is not a node flag
  return /^(node|bun)/.test(p.comm) && script !== undefined && /(^|[\\/])condense(\.js)?$/.test(script);
}

/** `pi, pid 812, started 09:14:03, 2 h ago`; another condense: `condense (node), pid 4410, …`. */
export function describeProcess(p: ProcessInfo, now = Date.now()): string {
  const started = p.startedMs === null ? "" : `, started ${new Date(p.startedMs).toTimeString().slice(0, 8)}, ${ago(now - p.startedMs)}`;
  const name = isCondenseProcess(p) ? `condense (${p.comm})` : p.comm;
  return `${name}, pid ${p.pid}${started}`;
}

/** `40 s ago`, `12 min ago`, `3 h ago`, `2 days ago`. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
};

/**
 * Check a session before writing to it (see the module comment).
 * @param options.env this process's environment (`PI_SESSION_FILE`)
 * @param options.procRoot `/proc` (tests point it elsewhere to check the parsing)
 * @param options.fresh scan the open files again (right before a write); otherwise a scan of the
 *   last second is reused. The processes themselves are always read anew (cheap).
 */
export async function checkSessionOpen(
  session: SessionFacts,
  options: { env?: NodeJS.ProcessEnv; procRoot?: string; platform?: NodeJS.Platform; now?: number; fresh?: boolean } = {},
): Promise<OpenCheck> {
  const env = options.env ?? process.env;
  const root = options.procRoot ?? "/proc";
  const now = options.now ?? Date.now();
  const path = real(session.path);
  const refusals: string[] = [];
  const warnings: string[] = [];
  // 2: inside Pi, on Pi's own session.
  const insidePi = !!env.PI_SESSION_FILE && real(env.PI_SESSION_FILE) === path;
  if (insidePi) {
    refusals.push("condense runs inside Pi, and this is the session that Pi has open ($PI_SESSION_FILE)");
  }
  if (!canListProcesses(root)) {
    // Said once per command, not once per file of an archive.
    if (!platformWarned) {
      platformWarned = true;
      const platform = options.platform ?? process.platform;
      warnings.push(`cannot check on ${platform} whether Pi or another process has a session open; exit Pi before condense writes to its session`);
    }
    return { checked: false, refusals, warnings, insidePi, byPi: insidePi };
  }
  const table = new ProcessTable(root);
  // 1: descriptors.
  const holders = (descriptorMap(root, !!options.fresh).byTarget.get(path) ?? []).filter((pid) => pid !== process.pid);
  for (const pid of holders) {
    const p = table.info(pid);
    if (p) refusals.push(`it is open in another process (${describeProcess(p, now)})`);
  }
  // 3 and 4: Pi processes working in the session's folder.
  let byPi = false;
  const cwd = session.cwd ? real(session.cwd) : null;
  for (const pid of table.pids) {
    // Only a Pi can refuse here: its name says so before anything else of it is read.
    const comm = table.comm(pid);
    if (comm !== null && !mayBePi(comm)) continue;
    const p = table.info(pid);
    if (!p || p.pid === process.pid || !isPiProcess(p) || cwd === null || p.cwd !== cwd) continue;
    const why = await whyPiHasIt(p, session, path, table, now);
    const where = `Pi is running in ${p.cwd} (${describeProcess(p, now)})`;
    if (why) {
      byPi = true;
      refusals.push(`${where} and ${why}`);
    } else if (!warnedPis.has(p.pid)) {
      // Once per Pi process and command, not once per session of its folder.
      warnedPis.add(p.pid);
      warnings.push(
        `${where}; condense cannot tell which session it has open — if it is ${session.path} (or another one condense writes to now), ` +
          "exit Pi first: its next message would leave condense's entries off the active branch",
      );
    }
  }
  return { checked: true, refusals, warnings, insidePi, byPi: insidePi || byPi };
}

/** Why this Pi process is taken to have the session open, or null. */
async function whyPiHasIt(p: ProcessInfo, session: SessionFacts, path: string, table: ProcessTable, now: number): Promise<string | null> {
  if (!session.lastChangeByCondense && p.startedMs !== null && session.mtimeMs > p.startedMs) {
    return `this session changed after that Pi started (${ago(now - session.mtimeMs)})`;
  }
  const piEnv = table.environment(p.pid) ?? process.env;
  const latest = await latestSessionFor(p.cwd ?? "", piEnv).catch(() => null);
  if (latest && real(latest) === path) return "this is the latest session there (the one `pi --continue` opens)";
  return null;
}
