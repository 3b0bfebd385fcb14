/**
 * Pi's settings as Pi 1.6 reads and merges them (`SettingsManager`, pi-coding-agent
 * `dist/core/settings-manager.js`): the global `<agent dir>/settings.json` (agent dir
 * `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`: `session/locate.ts` `agentDir`), then the
 * project's `<cwd>/.pi/settings.json` deep-merged over it — nested objects merge key by key,
 * anything else (arrays included) is replaced, except `defaultTools`, where a list of only
 * `+name`/`-name` entries is appended to the inherited one. A file that is missing or empty counts as `{}`; a BOM is ignored; a file that is
 * not a JSON object is reported in `errors` and counts as `{}`.
 *
 * Project trust. Pi reads a project's settings only when the project is trusted (`project-trust.js`,
 * `trust-manager.js`): a saved decision in `<agent dir>/trust.json` for the folder or its nearest
 * listed ancestor, else the global `defaultProjectTrust` ("always" / "never"); with neither, Pi
 * asks when it has a terminal and otherwise does not trust. condense cannot ask, so it does what
 * Pi does without a terminal: the project settings are read only with a saved "trust" decision or
 * `defaultProjectTrust: "always"`; {@link projectTrust} says which rule decided. Nothing here writes
 * or locks a file. Legacy key migrations Pi applies on load (`queueMode`, `websockets`, the old
 * `skills` object, `retry.maxDelayMs`) are not applied: condense reads none of those keys.
 *
 * The pi-condense extension itself reads `contextPrune` only from the global file, with a plain
 * `JSON.parse` (pi-condense 2.9.1 `src/config.ts`): {@link piCondenseStatus} follows that.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { agentDir as piAgentDir } from "../session/locate.js";
import { readRegularFileSync } from "../util/files.js";
import { errnoWords } from "../util/errors.js";

export interface PiSettings {
  /** Global settings with the project's merged over them (when read). */
  merged: Record<string, unknown>;
  globalPath: string;
  projectPath: string;
  /** True when the project's settings.json exists, the project is trusted, and it was read. */
  projectLoaded: boolean;
  /** Files that exist but could not be used, with why. */
  errors: { path: string; message: string }[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A settings file as Pi loads it: missing or empty → `{}`; BOM stripped; must be a JSON object. */
function readSettingsFile(path: string, errors: PiSettings["errors"]): Json {
  let text: string;
  try {
    text = readRegularFileSync(path, "utf8"); // a FIFO is refused, not waited on
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") errors.push({ path, message: `cannot read: ${errnoWords(error)}` });
    return {};
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    errors.push({ path, message: `not valid JSON: ${(error as Error).message}` });
    return {};
  }
  if (!isObject(value)) {
    errors.push({ path, message: "not a JSON object" });
    return {};
  }
  return value;
}

function deepMerge(base: Json, overrides: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    out[key] = isObject(base[key]) && isObject(value) ? deepMerge(base[key] as Json, value) : value;
  }
  return out;
}

const isToolModifier = (e: unknown) => typeof e === "string" && (e.startsWith("+") || e.startsWith("-"));

/** Pi's `deepMergeSettings`: {@link deepMerge}, with `+name`/`-name` lists of `defaultTools` appended. */
function mergeSettings(base: Json, overrides: Json): Json {
  const merged = deepMerge(base, overrides);
  const b = base.defaultTools;
  const o = overrides.defaultTools;
  if (o !== undefined && Array.isArray(b) && Array.isArray(o) && o.every(isToolModifier)) merged.defaultTools = [...b, ...o];
  return merged;
}

/** Whether Pi would read a project's settings, and which rule says so. */
export interface ProjectTrust {
  trusted: boolean;
  /** `trust.json` (a saved decision), `defaultProjectTrust`, or `undecided` (Pi would ask; condense does not trust). */
  rule: "trust.json" | "defaultProjectTrust" | "undecided";
  detail: string;
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Pi's trust decision for `cwd` without a terminal: the nearest folder (cwd, then its parents)
 * with `true`/`false` in `<agent dir>/trust.json`, else the global `defaultProjectTrust`.
 */
export function projectTrust(cwd: string, agentDir: string, globalSettings: Json): ProjectTrust {
  const trustPath = join(agentDir, "trust.json");
  const errors: PiSettings["errors"] = [];
  const store = new Map<string, unknown>();
  if (existsSync(trustPath)) for (const [key, value] of Object.entries(readSettingsFile(trustPath, errors))) store.set(resolve(key), value);
  let dir = canonical(cwd);
  for (;;) {
    const decision = store.get(dir);
    if (decision === true || decision === false) {
      return { trusted: decision, rule: "trust.json", detail: `${trustPath} says ${decision ? "trust" : "do not trust"} ${dir}` };
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  const mode = globalSettings.defaultProjectTrust;
  if (mode === "always" || mode === "never") {
    return { trusted: mode === "always", rule: "defaultProjectTrust", detail: `defaultProjectTrust is "${mode}"` };
  }
  return {
    trusted: false,
    rule: "undecided",
    detail: `no decision for ${canonical(cwd)} in ${trustPath} and defaultProjectTrust is not "always" (Pi would ask)`,
  };
}

/**
 * Read Pi's settings for a project folder, merged as Pi merges them.
 * @param options.cwd the project folder (a session's `cwd`); relative paths resolve against the process's
 * @param options.agentDir Pi's agent folder (default `session/locate.ts` `agentDir`)
 */
export function readPiSettings(options: { cwd: string; agentDir?: string }): PiSettings {
  const agentDir = options.agentDir ?? piAgentDir();
  const globalPath = join(agentDir, "settings.json");
  const projectPath = join(resolve(options.cwd), ".pi", "settings.json");
  const errors: PiSettings["errors"] = [];
  const global = readSettingsFile(globalPath, errors);
  let merged = global;
  let projectLoaded = false;
  if (existsSync(projectPath) && projectTrust(options.cwd, agentDir, global).trusted) {
    merged = mergeSettings(global, readSettingsFile(projectPath, errors));
    projectLoaded = !errors.some((e) => e.path === projectPath);
  }
  return { merged, globalPath, projectPath, projectLoaded, errors };
}

/**
 * A project settings file that holds a `contextPrune` block — which neither the pi-condense
 * extension (2.9.1 `src/config.ts` reads only the global settings.json) nor condense reads.
 * The file is looked at whether or not Pi trusts the project.
 * @param cwd the project folder (a session's `cwd`)
 * @returns the file's path when it holds such a block, else null
 */
export function ignoredProjectContextPrune(cwd: string): string | null {
  const path = join(resolve(cwd), ".pi", "settings.json");
  if (!existsSync(path)) return null;
  const value = readSettingsFile(path, []);
  return value.contextPrune !== undefined ? path : null;
}

/** Whether the pi-condense extension will prune what Pi sends, and why not. */
export interface PiCondenseStatus {
  /** `contextPrune.enabled` is `true` where and as the extension reads it. */
  enabled: boolean;
  /** Where Pi's settings or extension folders load the extension from; null when none was found. */
  installedAs: string | null;
  /** The settings file the extension reads its switch from. */
  settingsPath: string;
  /** Why it is not switched on (undefined when it is). */
  reason?: string;
}

const EXTENSION = "pi-condense";

function packageName(dir: string): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown };
    return typeof pkg.name === "string" ? pkg.name : undefined;
  } catch {
    return undefined;
  }
}

/** Does a `packages` source name the extension? (`npm:pi-condense[@v]`, a git URL, or a local checkout.) */
function sourceIsExtension(source: string, baseDir: string): boolean {
  if (source.startsWith("npm:")) return /^npm:\s*pi-condense(@.*)?$/.test(source.trim());
  if (/^(git:|git\+|https?:|ssh:|git@)/.test(source)) return /[/:]pi-condense(\.git)?\/?(#.*)?$/.test(source);
  const path = source.startsWith("~/") ? join(homedir(), source.slice(2)) : isAbsolute(source) ? source : resolve(baseDir, source);
  return packageName(path) === EXTENSION;
}

/** The first place the extension is installed, searched the ways Pi loads extensions. */
function findInstall(settings: { scope: string; values: Json; baseDir: string }[]): string | null {
  for (const { scope, values, baseDir } of settings) {
    for (const entry of Array.isArray(values.packages) ? values.packages : []) {
      const source = typeof entry === "string" ? entry : isObject(entry) && typeof entry.source === "string" ? entry.source : undefined;
      if (source && sourceIsExtension(source, baseDir)) return `${source} in the ${scope} packages`;
    }
    for (const entry of Array.isArray(values.extensions) ? values.extensions : []) {
      if (typeof entry !== "string" || /^[+\-!]/.test(entry)) continue;
      const path = isAbsolute(entry) ? entry : resolve(baseDir, entry);
      const dir = existsSync(path) && statSync(path).isFile() ? dirname(path) : path;
      if (packageName(dir) === EXTENSION) return `${entry} in the ${scope} extensions`;
    }
    const folder = join(baseDir, "extensions");
    if (!existsSync(folder)) continue;
    for (const name of readdirSync(folder)) {
      if (packageName(join(folder, name)) === EXTENSION) return join(folder, name);
    }
  }
  return null;
}

/**
 * Is the pi-condense extension installed and switched on for a project? Switched on means what the
 * extension checks (pi-condense 2.9.1 `loadConfig`): the global settings.json parses with a plain
 * `JSON.parse` (a BOM makes it fail), holds a `contextPrune` object, and its `enabled` is `true`;
 * project settings never switch it. Installed is looked up in the `packages` and `extensions` of
 * the global and (trusted) project settings, and in the `extensions/` folders Pi scans; `pi -e`
 * cannot be seen from here.
 */
export function piCondenseStatus(options: { cwd: string; agentDir?: string }): PiCondenseStatus {
  const agentDir = options.agentDir ?? piAgentDir();
  const settings = readPiSettings({ ...options, agentDir });
  const errors: PiSettings["errors"] = [];
  const global = readSettingsFile(settings.globalPath, errors);
  const scopes = [{ scope: "global", values: global, baseDir: agentDir }];
  if (settings.projectLoaded)
    scopes.unshift({ scope: "project", values: readSettingsFile(settings.projectPath, errors), baseDir: dirname(settings.projectPath) });
  const installedAs = findInstall(scopes);

  let reason: string | undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularFileSync(settings.globalPath, "utf8"));
  } catch (error) {
    reason =
      (error as NodeJS.ErrnoException).code === "ENOENT"
        ? `${settings.globalPath} does not exist`
        : `${settings.globalPath} cannot be read by the extension (${(error as Error).message})`;
  }
  if (!reason) {
    const block = isObject(raw) ? raw.contextPrune : undefined;
    if (!isObject(block)) reason = `${settings.globalPath} has no "contextPrune" object`;
    else if (block.enabled !== true) reason = `"contextPrune.enabled" is ${JSON.stringify(block.enabled) ?? "not set"} in ${settings.globalPath}`;
  }
  return { enabled: !reason, installedAs, settingsPath: settings.globalPath, ...(reason ? { reason } : {}) };
}
