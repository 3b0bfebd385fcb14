/**
 * Driving a command in a real terminal: a detached tmux session runs it under a shell that ignores
 * Ctrl-C itself and records the command's exit status in a file; keys are typed into the pane with
 * `send-keys` (C-c reaches the command as the terminal's interrupt character, as when a user types it).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { withoutRunnerVars } from "./runner-env.js";

/**
 * tmux on a server of this test process's own (`-L`), so that no other tmux user on the machine
 * (a `kill-server`, a session of the same name) reaches the sessions these tests drive.
 */
const SOCKET = `condense-tty-${process.pid}`;

/**
 * Run a tmux command on this process's server. The first call starts the server, with this
 * process's environment minus the runner's own variables (runner-env.ts) — also those a test sets
 * on purpose — so every pane is a user's terminal.
 */
export const tmux = (...args: string[]) => spawnSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8", env: withoutRunnerVars(process.env) });
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

/**
 * The files among `files` whose size is no longer the one `sizes` holds for them (a session
 * condense appended to), found with stat(2) alone: nothing is opened. A test that polls the
 * sessions condense is writing must not read them — condense refuses to write a session another
 * process has open (pi-running.ts, rule 1), so a read that coincides with its check right before a
 * write turns that session into a failure ("it is open in another process (node, …)").
 */
export function grownFiles(files: string[], sizes: Map<string, number>): string[] {
  return files.filter((f) => statSync(f).size !== sizes.get(f));
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

/** What {@link watchCli}'s preload has seen of one command so far. */
export interface CliWatch {
  /** For the command's environment: `NODE_OPTIONS` with the preload. */
  env: Record<string, string>;
  /** condense's own Ctrl-C handler is installed (interruptOnSigint, batch.ts): a Ctrl-C now ends the batch, exit 130. */
  handlesSigint(): boolean;
  /** The sessions opened to be read whole (readSessionFile, reader.ts), in order. */
  sessionsRead(): string[];
}

/**
 * Watch a run of the built CLI from inside it: a preload (`node --require`, in `dir`) appends to a
 * log when condense installs its Ctrl-C handler and each time it opens a session to read it whole.
 * A test waits for these instead of guessing with a sleep: node catches SIGINT itself from its
 * start (to restore the terminal, then die by the signal), so /proc's SigCgt says nothing about
 * condense's handler, which is installed only once the command's modules have loaded; and with
 * `--jobs 1` a session is opened only after the one before it is done, so the second one read
 * means one is done.
 */
export function watchCli(dir: string, name: string): CliWatch {
  const log = path.join(dir, `${name}.watch`);
  const preload = path.join(dir, `${name}.watch.cjs`);
  rmSync(log, { force: true });
  writeFileSync(
    preload,
    `const { appendFileSync } = require("node:fs");
const log = ${JSON.stringify(log)};
const called = (name) => (new Error().stack ?? "").includes(\` at \${name} (\`); // a frame of that function
// Emitted right before the listener is added, in the same turn: the log is read later.
process.on("newListener", (event) => {
  if (event === "SIGINT" && called("interruptOnSigint")) appendFileSync(log, "sigint\\n");
});
const fsp = require("node:fs/promises");
const open = fsp.open;
fsp.open = function (file, ...rest) {
  if (called("readSessionFile")) appendFileSync(log, \`read \${file}\\n\`);
  return open.call(this, file, ...rest);
};
require("node:module").syncBuiltinESMExports(); // reader.ts imports open by name (ESM)
`,
  );
  const lines = () =>
    existsSync(log)
      ? readFileSync(log, "utf8")
          .split("\n")
          .filter((l) => l !== "")
      : [];
  return {
    env: { NODE_OPTIONS: `--require ${preload}` },
    handlesSigint: () => lines().includes("sigint"),
    sessionsRead: () => lines().flatMap((l) => (l.startsWith("read ") ? [l.slice(5)] : [])),
  };
}
