/**
 * Test helpers for the command line: run `main()` in-process with stdout and stderr captured, in a
 * hermetic Pi folder (no settings.json), and make temp copies of session files.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runCli as captureCli, type CliRun } from "./cli-harness.js";
import { copyInto, FIXTURES, makeTempDir, REPO_ROOT, SHARED_SESSIONS } from "./helpers.js";

export { copyInto, FIXTURES, REPO_ROOT, SHARED_SESSIONS };
export type CliResult = CliRun;

export const fixture = (name: string) => path.join(FIXTURES, name);

/** A fresh temp folder; call `cleanup` to remove it. */
export const tempDir = (prefix: string) => makeTempDir(prefix);

/** Run `condense <args...>` in-process; colors off, no Pi settings. */
export async function runCli(...args: string[]): Promise<CliRun> {
  return runCliWith({}, ...args);
}

/** {@link runCli} with more environment variables (e.g. `COLUMNS`). */
export async function runCliWith(env: Record<string, string | undefined>, ...args: string[]): Promise<CliRun> {
  const piDir = mkdtempSync(path.join(tmpdir(), "condense6-pi-"));
  try {
    return await captureCli(args, { PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", ...env });
  } finally {
    rmSync(piDir, { recursive: true, force: true });
  }
}
