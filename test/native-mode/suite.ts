/**
 * Native mode (`run --target pi`) against Pi 1.6 itself, for a set of session files. Per file:
 * - `before`: a copy as it is; `native`: a copy after `run --target pi` (v1/v2 with `--migrate`);
 *   `extension`: a copy after `run --target extension` — all three handed to the extension oracle
 *   (Pi's own extension loader, `buildSessionContext`, the extension's `context` handler, then
 *   `convertToLlm`), which reports both what Pi sends with the extension switched on (`messages`)
 *   and what stock Pi sends (`piOnly`);
 * - on the native copy: `render --as pi-only --format json`, and a second `run --target pi` (which
 *   must append nothing).
 * The checks themselves are in checks.ts.
 */
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { continueFolder } from "../../src/session/locate.js";
import { runCli, type CliRun } from "../cli-harness.js";
import { type HarnessResult, runHarness } from "../extension-oracle/client.js";
import { NOW, type OracleCase, type PreparedSession, prepareSuite } from "../extension-oracle/cases.js";

export interface NativeSession extends PreparedSession {
  /** `run --target extension` on another copy, and the oracle on that copy (null when run refused). */
  extension: { file: string; run: CliRun; pi: HarnessResult | null };
  /** On the native copy (null when run refused): `render --as pi-only --format json`. */
  piOnly: CliRun | null;
  /** The second `run --target pi` on the native copy: its exit code and whether the file kept its bytes. */
  secondRun: { code: number; unchanged: boolean } | null;
}

/**
 * Prepare every file: the oracle suite with `run --target pi`, then the extension-target copies
 * and their oracle results, then the pi-only render and the second run of each native copy.
 * @param agentDir Pi's agent folder (its settings.json switches the extension on for the oracle)
 */
export async function prepareNativeSuite(sources: string[], dir: string, agentDir: string, children = 1): Promise<Map<string, NativeSession>> {
  const env = { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: agentDir };
  // Each native copy where Pi keeps the sessions of its cwd, as a user's session is: its stubs then
  // name `condense query <ref>` without --session (the recovery test covers --session).
  const inPiFolder = (source: string) => {
    const cwd = (readHeader(source)?.cwd as string | undefined) ?? "";
    return path.join(cwd ? continueFolder(cwd, env).dir : path.join(dir, "native-no-cwd"), path.basename(source));
  };
  const suite = await prepareSuite(sources, path.join(dir, "native"), agentDir, children, { target: "pi", afterPath: inPiFolder });
  const extension = new Map<string, { file: string; run: CliRun }>();
  for (const source of sources) {
    const name = path.basename(source);
    const copyDir = path.join(dir, "extension", name.replace(/\.jsonl$/, ""));
    mkdirSync(copyDir, { recursive: true });
    const file = path.join(copyDir, name);
    copyFileSync(source, file);
    extension.set(name, { file, run: await runCli(["run", file, "--migrate", "--target", "extension", "--quiet"], env) });
  }
  const ran = [...extension.entries()].filter(([, e]) => e.run.code === 0);
  const groups = Array.from({ length: children }, (_, g) => ran.filter((_, i) => i % children === g));
  const answers = await Promise.all(
    groups.map((group) =>
      runHarness(
        group.map(([, e]) => ({ file: e.file, queries: [], probeRefs: 0 })),
        agentDir,
      ),
    ),
  );
  const extensionPi = new Map<string, HarnessResult>();
  groups.forEach((group, g) => {
    for (const [i, [name]] of group.entries()) extensionPi.set(name, answers[g][i]);
  });

  const out = new Map<string, NativeSession>();
  for (const [name, prepared] of suite) {
    const after = prepared.case.after;
    const e = extension.get(name)!;
    out.set(name, {
      ...prepared,
      extension: { ...e, pi: extensionPi.get(name) ?? null },
      piOnly: after ? await runCli(["render", after.piFile, "--as", "pi-only", "--format", "json", "--quiet"], env) : null,
      secondRun: after ? await secondRun(after.piFile, env) : null,
    });
  }
  return out;
}

async function secondRun(file: string, env: Record<string, string>): Promise<{ code: number; unchanged: boolean }> {
  const bytes = readFileSync(file);
  const r = await runCli(["run", file, "--target", "pi", "--quiet"], env);
  return { code: r.code, unchanged: readFileSync(file).equals(bytes) };
}

/** The first line of a file as a JSON object (a session header), or null. */
function readHeader(file: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(readFileSync(file, "utf8").split("\n", 1)[0]);
    return value?.type === "session" ? value : null;
  } catch {
    return null;
  }
}

/** The tool calls a session file's message entries hold (every branch). */
export function toolCallsInFile(file: string): number {
  let n = 0;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    let entry: { type?: string; message?: { role?: string; content?: unknown } } | null = null;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    const content = entry?.type === "message" && entry.message?.role === "assistant" ? entry.message.content : undefined;
    if (Array.isArray(content)) n += content.filter((b) => b?.type === "toolCall").length;
  }
  return n;
}

export type { OracleCase };
