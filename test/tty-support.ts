/**
 * Driving a command in a real terminal: a detached tmux session runs it under a shell that ignores
 * Ctrl-C itself and records the command's exit status in a file; keys are typed into the pane with
 * `send-keys` (C-c reaches the command as the terminal's interrupt character, as when a user types it).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import path from "node:path";

/**
 * tmux on a server of this test process's own (`-L`), so that no other tmux user on the machine
 * (a `kill-server`, a session of the same name) reaches the sessions these tests drive.
 */
const SOCKET = `condense-tty-${process.pid}`;
export const tmux = (...args: string[]) => spawnSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
export const hasTmux = tmux("-V").status === 0;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll `check` every 50 ms until it holds. @throws Error naming `what` after `ms` */
export async function waitFor(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Single-quote a word for sh. */
export const shq = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/** One command running in its own tmux session. */
export interface TtyRun {
  /** The pane's text, wrapped lines joined. */
  screen(): string;
  /** Type keys (tmux key names: `C-c`, `Enter`). */
  keys(...keys: string[]): void;
  /** The command's exit status once it has ended, else null. */
  status(): number | null;
  /** Wait for the exit status. @throws Error with the screen when it does not come within `ms` */
  exited(ms?: number): Promise<number>;
  /**
   * {@link waitFor} `check`; on a timeout the error also gives the exit status (if the command has
   * ended) and the screen, so a failure says what the terminal showed instead (also on stderr).
   */
  waitFor(what: string, check: () => boolean, ms?: number): Promise<void>;
  kill(): void;
}

/**
 * Start `argv` (words, quoted for sh) in a 120×30 terminal, in `cwd`, with `env` added.
 * @param dir a folder for the status file
 */
export function startInTty(name: string, dir: string, argv: string[], env: Record<string, string> = {}, cwd = dir): TtyRun {
  const session = `condense-${name}-${process.pid}`;
  const rc = path.join(dir, `${name}.rc`);
  const vars = Object.entries(env).map(([k, v]) => `${k}=${shq(v)}`);
  const command = `cd ${shq(cwd)} && env ${vars.join(" ")} ${argv.map(shq).join(" ")}`;
  const script = `trap '' INT; ${command}; echo "EXIT=$?" > ${shq(rc)}; sleep 120`;
  tmux("kill-session", "-t", session);
  rmSync(rc, { force: true }); // an earlier try's status (a retried test)
  // A server that just exited with its last session may still hold the socket: try again briefly.
  let started = tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "30", "sh", "-c", script);
  for (let i = 0; i < 5 && started.status !== 0; i++) {
    spawnSync("sleep", ["0.2"]);
    started = tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "30", "sh", "-c", script);
  }
  if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr}`);
  const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", session).stdout;
  const status = () => {
    if (!existsSync(rc)) return null;
    const m = /EXIT=(\d+)/.exec(readFileSync(rc, "utf8"));
    return m ? Number(m[1]) : null;
  };
  return {
    screen,
    keys: (...keys) => {
      tmux("send-keys", "-t", session, ...keys);
    },
    status,
    exited: async (ms = 20_000) => {
      await waitFor("the exit status", () => status() !== null, ms).catch((e) => {
        throw new Error(`${(e as Error).message}; screen:\n${screen()}`);
      });
      return status() as number;
    },
    waitFor: (what, check, ms) =>
      waitFor(what, check, ms).catch((e) => {
        const code = status();
        const message = `${(e as Error).message}${code === null ? "" : ` (the command exited with ${code})`}; screen:\n${screen()}`;
        console.error(`${name}: ${message}`); // in the log also when a retry then passes
        throw new Error(message);
      }),
    kill: () => {
      tmux("kill-session", "-t", session);
    },
  };
}

/**
 * True when process `pid` catches SIGINT (Linux: bit 2 of `SigCgt` in /proc/<pid>/status): a
 * command's own handler is installed, so a Ctrl-C now reaches it. False when the process is gone.
 */
export function catchesSigint(pid: number | string): boolean {
  try {
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "0";
    return (BigInt(`0x${mask}`) & 2n) !== 0n;
  } catch {
    return false;
  }
}

/** The `node` processes whose command line contains `text` (pgrep -f), by pid. */
/**
 * The paths process `pid` has open now (its /proc/<pid>/fd links; a hard link shows the name it was
 * opened by). Empty when the process is gone.
 */
export function openPaths(pid: number | string): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [readlinkSync(`/proc/${pid}/fd/${fd}`)];
      } catch {
        return []; // closed between the listing and the read
      }
    });
  } catch {
    return [];
  }
}

export function nodeProcesses(text: string): string[] {
  return spawnSync("pgrep", ["-f", text], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((pid) => {
      try {
        return pid !== "" && readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "node";
      } catch {
        return false; // gone between pgrep and the read
      }
    });
}
