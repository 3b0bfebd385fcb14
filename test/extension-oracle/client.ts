/**
 * Starts `harness.ts` (the pi-condense extension loaded by Pi 1.6's own extension loader) or
 * `settings-harness.ts` (Pi's own settings reading) in a child process under Node 22 with tsx —
 * both devDependencies — and returns what it reports.
 * The product and the rest of the tests stay on the Node that runs the tests.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { HarnessJob, HarnessResult, PiSettingsResult } from "./protocol.js";

export type { HarnessJob, HarnessResult, PiSettingsResult } from "./protocol.js";

const REPO = path.resolve(__dirname, "../..");
/** The Node 22 binary of the `node` devDependency. */
export const NODE22 = path.join(REPO, "node_modules/node/bin/node");
/** The unmodified extension source (MIT), beside the project. */
export const EXTENSION = path.resolve(REPO, "../shared/oracles/pi-condense-2.9.1");

/** True when the oracle can run here: Node 22 installed and the extension source present. */
export function oracleAvailable(): boolean {
  return existsSync(NODE22) && existsSync(path.join(EXTENSION, "index.ts"));
}

/**
 * An agent folder whose settings.json switches the extension on (`contextPrune.enabled`), as a
 * user does; nothing else is set, so the extension runs with its defaults.
 */
export function makeAgentDir(dir: string, contextPrune: Record<string, unknown> = { enabled: true }): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "settings.json"), `${JSON.stringify({ contextPrune }, null, 2)}\n`);
  return dir;
}

/**
 * Run a script of this folder in a child process under Node 22 with tsx: `input` as JSON on its
 * stdin, its JSON document from stdout.
 * @throws Error with the child's stderr when it fails
 */
function runNode22<T>(script: string, input: unknown, env: Record<string, string>): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE22, ["--import", "tsx", path.join(__dirname, script)], {
      cwd: REPO,
      env: { ...process.env, ...env, NODE_OPTIONS: "" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}:\n${err}`));
      try {
        resolve(JSON.parse(Buffer.concat(out).toString("utf8")) as T);
      } catch (error) {
        reject(new Error(`${script} printed no JSON (${(error as Error).message}):\n${err}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
}

/**
 * Run the extension harness on `jobs` in one child process.
 * @param agentDir the PI_CODING_AGENT_DIR the extension reads its settings from
 */
export async function runHarness(jobs: HarnessJob[], agentDir: string): Promise<HarnessResult[]> {
  const doc = await runNode22<{ results: HarnessResult[] }>("harness.ts", { extension: EXTENSION, sessions: jobs }, { PI_CODING_AGENT_DIR: agentDir });
  return doc.results;
}

/** Pi's own settings reading for each case, in one child process. */
export async function runSettingsHarness(cases: { cwd: string; agentDir: string }[]): Promise<PiSettingsResult[]> {
  return (await runNode22<{ results: PiSettingsResult[] }>("settings-harness.ts", { cases }, {})).results;
}
