/**
 * Where Pi 1.6 keeps the sessions of a working directory, read the way `pi --continue` reads it
 * (pi-coding-agent `main.js`, `SessionManager.continueRecent`, `SettingsManager.getSessionDir`,
 * `utils/paths.js` `normalizePath`): `$PI_CODING_AGENT_SESSION_DIR`, else the `sessionDir` setting
 * (the project's `<cwd>/.pi/settings.json` over the global `<agent dir>/settings.json`), else the
 * per-cwd folder below `<agent dir>/sessions/`.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readRegularFileSync } from "../util/files.js";

/**
 * Pi's path normalization for configured paths: `~` and `~/…` expand to the home folder, `file://`
 * URLs become paths; anything else is returned unchanged (relative paths stay relative).
 */
export function expandPiPath(input: string): string {
  if (input === "~") return homedir();
  if (input.startsWith("~/")) return join(homedir(), input.slice(2));
  if (/^file:\/\//.test(input)) return fileURLToPath(input);
  return input;
}

/** A session folder chosen by configuration rather than Pi's per-cwd default, and who chose it. */
export interface CustomSessionDir {
  /** Absolute path of the folder. */
  dir: string;
  source: "PI_CODING_AGENT_SESSION_DIR" | "settings";
  /** The settings file that set it (source `settings`). */
  settingsPath?: string;
}

/** The settings object of one file, or `{}` when absent or unreadable (Pi reports a broken settings file and goes on without it). */
function readSettings(path: string): Record<string, unknown> {
  if (!existsSync(path)) return {};
  try {
    const value = JSON.parse(readRegularFileSync(path, "utf8").replace(/^\uFEFF/, "")); // a FIFO: not waited on
    return value && typeof value === "object" && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * The session folder configured for `cwd`, or undefined when Pi uses its per-cwd default.
 * The project's `sessionDir` key, when present, wins over the global one (Pi's deep merge), and an
 * empty value means the default. A relative `sessionDir` resolves from `cwd`, as Pi documents.
 * @param agentDirPath Pi's agent folder (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`), absolute
 */
export function customSessionDir(cwd: string, agentDirPath: string, env: NodeJS.ProcessEnv = process.env): CustomSessionDir | undefined {
  const fromEnv = env.PI_CODING_AGENT_SESSION_DIR;
  if (fromEnv) return { dir: resolve(cwd, expandPiPath(fromEnv)), source: "PI_CODING_AGENT_SESSION_DIR" };
  const projectPath = join(resolve(cwd), ".pi", "settings.json");
  const globalPath = join(agentDirPath, "settings.json");
  const project = readSettings(projectPath);
  const settingsPath = project.sessionDir !== undefined ? projectPath : globalPath;
  const value = project.sessionDir !== undefined ? project.sessionDir : readSettings(globalPath).sessionDir;
  if (typeof value !== "string" || value === "") return undefined;
  return { dir: resolve(cwd, expandPiPath(value)), source: "settings", settingsPath };
}
