/**
 * Whom `run` writes for (docs/design.md §11): `extension` — the pi-condense extension's
 * entries only, which shrink what Pi sends only while the extension is installed and switched on;
 * `pi` — those entries plus Pi 1.6's own `context_edit` entries, so that stock Pi sends the pruned
 * context by itself; `auto` (the default) — `pi`, unless Pi's settings for the session's project
 * show the extension installed and switched on (`config/pi-settings.ts` `piCondenseStatus`).
 */
import { resolve } from "node:path";
import { piCondenseStatus } from "../config/pi-settings.js";
import type { RecoveryOptions } from "../context/vocabulary.js";
import { continueFolderHolds, realOrResolved } from "../session/locate.js";

export type RunTarget = "extension" | "pi";
export type TargetChoice = RunTarget | "auto";

/** The target a run used, and why (the report prints both). */
export interface TargetDecision {
  used: RunTarget;
  reason: string;
}

/**
 * Decide the target for one session.
 * @param cwd the session's project folder (its header's `cwd`; default the current folder), whose
 *   `.pi/settings.json` Pi merges over the global settings when the project is trusted
 * @param agentDir Pi's agent folder (default `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`)
 */
export function decideTarget(choice: TargetChoice, cwd: string | undefined, agentDir?: string): TargetDecision {
  if (choice !== "auto") return { used: choice, reason: `--target ${choice}` };
  const status = piCondenseStatus({ cwd: cwd || resolve("."), ...(agentDir ? { agentDir } : {}) });
  if (status.enabled && status.installedAs) {
    return { used: "extension", reason: `pi-condense is installed (${status.installedAs}) and switched on in ${status.settingsPath}` };
  }
  if (status.enabled) return { used: "pi", reason: `pi-condense is switched on in ${status.settingsPath} but does not look installed` };
  const installed = status.installedAs ? `pi-condense is installed (${status.installedAs}) but not switched on: ` : "";
  return { used: "pi", reason: `${installed}${status.reason}` };
}

/** Whom a run writes for, and for `pi` how its stubs name the session. */
export interface RunFor {
  target: TargetDecision;
  recovery: RecoveryOptions;
}

/**
 * Decide the target for a session and how stock-Pi stubs name it: `condense query <ref>` alone
 * when it finds the file from the session's cwd (the folder `pi --continue` searches), else with
 * `--session <absolute path>`. Inside Pi 1.6 the command needs neither (Pi's bash tool names the
 * current session in `$PI_SESSION_FILE`), so the path is only a fallback, and one that breaks when
 * the file moves: an `--output` file, which is usually checked and then moved over its input, is
 * named only when neither it nor the input is in that folder.
 * @param sessionPath where the entries go (the session, or `--output`)
 * @param cwd the session's header `cwd`
 * @param inputPath the session read, when the entries go to `--output`
 */
export function runFor(choice: TargetChoice, sessionPath: string, cwd: string | undefined, inputPath: string = sessionPath): RunFor {
  const found = continueFolderHolds(sessionPath, cwd) || continueFolderHolds(inputPath, cwd);
  return { target: decideTarget(choice, cwd), recovery: found ? {} : { session: resolve(sessionPath) } };
}

/**
 * How a recovery command printed for the user now (a run's notes, a report's outputs) names the
 * session — the stubs' command (context/vocabulary.ts `recoveryCommand`), with `--session <absolute
 * path>` unless `condense query` run here finds the session by itself: `$PI_SESSION_FILE` names
 * it, or, with that unset, it is in the folder `pi --continue` searches for the current folder.
 */
export function recoveryFromHere(sessionPath: string, env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): RecoveryOptions {
  const current = env.PI_SESSION_FILE;
  const found = current ? realOrResolved(resolve(cwd, current)) === realOrResolved(sessionPath) : continueFolderHolds(sessionPath, cwd, env);
  return found ? {} : { session: resolve(sessionPath) };
}
