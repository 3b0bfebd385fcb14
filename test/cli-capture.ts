/**
 * Test helpers for the command line: run `main()` in-process with stdout and stderr captured, in a
 * hermetic Pi folder (no settings.json), and make temp copies of session files.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { vi } from "vitest";
import { main } from "../src/cli/main.js";

export const REPO_ROOT = path.resolve(__dirname, "..");
export const FIXTURES = path.join(REPO_ROOT, "fixtures");
export const SHARED_SESSIONS = path.resolve(__dirname, "../../shared/sessions");

export const fixture = (name: string) => path.join(FIXTURES, name);

/** A fresh temp folder; call `cleanup` to remove it. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `condense6-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Copy `src` into `dir` (same base name unless `name` is given) and return the copy's path. */
export function copyInto(dir: string, src: string, name = path.basename(src)): string {
  const dest = path.join(dir, name);
  copyFileSync(src, dest);
  return dest;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `condense <args...>` in-process; colors off, no Pi settings. */
export async function runCli(...args: string[]): Promise<CliResult> {
  const piDir = mkdtempSync(path.join(tmpdir(), "condense6-pi-"));
  const env = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, NO_COLOR: process.env.NO_COLOR };
  process.env.PI_CODING_AGENT_DIR = piDir;
  process.env.NO_COLOR = "1";
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(["node", "condense", ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(piDir, { recursive: true, force: true });
  }
}
