/**
 * Pi 1.6's own reading of its settings, as the oracle for src/config/pi-settings.ts. Runs under
 * Node 22 with tsx (Pi's settings module pulls in undici, which needs Node 22); `client.ts` starts it.
 *
 * Input (JSON on stdin): { cases: { cwd, agentDir }[] }. Per case, without a terminal (as condense
 * runs): Pi's project-trust decision (`resolveProjectTrusted` with `hasUI: false`, no extensions),
 * then `SettingsManager.create(cwd, agentDir, { projectTrusted })`: the merged settings and the
 * files it could not load. Output (JSON on stdout): { results: { trusted, merged, errorPaths }[] }.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { readInput, runChild, type PiSettingsResult } from "./protocol.js";

const PI = path.resolve(import.meta.dirname, "../../node_modules/@earendil-works/pi-coding-agent/dist/core");
const importPi = async (rel: string): Promise<any> => import(pathToFileURL(path.join(PI, rel)).href);

async function main(): Promise<{ results: PiSettingsResult[] }> {
  const { cases } = await readInput<{ cases: { cwd: string; agentDir: string }[] }>();
  const { SettingsManager } = await importPi("settings-manager.js");
  const { ProjectTrustStore } = await importPi("trust-manager.js");
  const { resolveProjectTrusted } = await importPi("project-trust.js");
  const results: PiSettingsResult[] = [];
  for (const { cwd, agentDir } of cases) {
    const globalOnly = SettingsManager.create(cwd, agentDir, { projectTrusted: false });
    const trusted = await resolveProjectTrusted({
      cwd,
      trustStore: new ProjectTrustStore(agentDir),
      defaultProjectTrust: globalOnly.getDefaultProjectTrust(),
      projectTrustContext: { hasUI: false },
    });
    const manager = SettingsManager.create(cwd, agentDir, { projectTrusted: trusted });
    const errorPaths = manager.drainErrors().map((e: { path?: string }) => e.path);
    results.push({ trusted, merged: manager.getSettings(), errorPaths });
  }
  return { results };
}

runChild(main);
