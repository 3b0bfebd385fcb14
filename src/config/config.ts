/**
 * Pruning configuration (SPEC.md section 3; keys and defaults are the seed's).
 *
 * Sources, later wins: built-in defaults → `contextPrune` in `$PI_CODING_AGENT_DIR/settings.json`
 * → `--config FILE` → `--set key=value` and dedicated flags. Invalid values are usage errors that
 * name the key, the value and the accepted range; they are never silently replaced.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { agentDir } from "../session/locate.js";
import { UsageError } from "../util/errors.js";

export type ThinkingSetting = "default" | "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
export type BatchingMode = "turn" | "agent-message";

export interface PruneConfig {
  summarizerModel: string;
  summarizerThinking: ThinkingSetting;
  batchingMode: BatchingMode;
  minBatchChars: number;
  dedupByContentHash: boolean;
  spillThreshold: number;
  spillPreviewBytes: number;
  protectedTools: string[];
  protectedPaths: string[];
  recoveryGraceTurns: number;
  autoBudgetThreshold: number | null;
  budgetTurnDelta: number | null;
  chainCompression: {
    enabled: boolean;
    rollingWindow: number;
    fuseRangeSummary: boolean;
    stripFinalAssistantThinking: boolean;
  };
  purgeErrors: { enabled: boolean; cooldownTurns: number; minArgChars: number };
  summarizerIdleTimeoutMs: number;
  summarizerMaxTimeoutMs: number;
}

/** Built-in defaults (SPEC.md section 3). */
export function defaultConfig(): PruneConfig {
  return {
    summarizerModel: "default",
    summarizerThinking: "default",
    batchingMode: "turn",
    minBatchChars: 1000,
    dedupByContentHash: true,
    spillThreshold: 65536,
    spillPreviewBytes: 2048,
    protectedTools: [],
    protectedPaths: ["**/skills/**/*.md"],
    recoveryGraceTurns: 3,
    autoBudgetThreshold: 0.735,
    budgetTurnDelta: 0.04,
    chainCompression: { enabled: true, rollingWindow: 3, fuseRangeSummary: true, stripFinalAssistantThinking: true },
    purgeErrors: { enabled: true, cooldownTurns: 2, minArgChars: 500 },
    summarizerIdleTimeoutMs: 20000,
    summarizerMaxTimeoutMs: 180000,
  };
}

type Validator = (value: unknown) => string | null; // null = valid, else the accepted range

const THINKING = ["default", "off", "minimal", "low", "medium", "high", "xhigh"];
const int = (min: number): Validator => (v) =>
  typeof v === "number" && Number.isInteger(v) && v >= min ? null : `an integer ≥ ${min}`;
const bool: Validator = (v) => (typeof v === "boolean" ? null : "true or false");
const oneOf = (choices: string[]): Validator => (v) =>
  typeof v === "string" && choices.includes(v) ? null : `one of ${choices.join(", ")}`;
const stringList: Validator = (v) =>
  Array.isArray(v) && v.every((s) => typeof s === "string") ? null : "a JSON array of strings";
const fractionOrNull: Validator = (v) =>
  v === null || (typeof v === "number" && v > 0 && v <= 1) ? null : "a number in (0, 1], or null to disable";
const modelRef: Validator = (v) =>
  v === "default" || (typeof v === "string" && /^[^/\s]+\/\S+$/.test(v)) ? null : `"default" or "provider/model-id"`;

/** Every key, dotted for nested ones, with its validator. */
export const CONFIG_KEYS: Record<string, Validator> = {
  summarizerModel: modelRef,
  summarizerThinking: oneOf(THINKING),
  batchingMode: oneOf(["turn", "agent-message"]),
  minBatchChars: int(0),
  dedupByContentHash: bool,
  spillThreshold: int(1),
  spillPreviewBytes: int(0),
  protectedTools: stringList,
  protectedPaths: stringList,
  recoveryGraceTurns: int(0),
  autoBudgetThreshold: fractionOrNull,
  budgetTurnDelta: fractionOrNull,
  "chainCompression.enabled": bool,
  "chainCompression.rollingWindow": int(0),
  "chainCompression.fuseRangeSummary": bool,
  "chainCompression.stripFinalAssistantThinking": bool,
  "purgeErrors.enabled": bool,
  "purgeErrors.cooldownTurns": int(0),
  "purgeErrors.minArgChars": int(0),
  summarizerIdleTimeoutMs: int(1),
  summarizerMaxTimeoutMs: int(1),
};

/**
 * Set one dotted key after validating it.
 * @param source where the value came from, for the error message ("--set", a file path)
 * @throws UsageError naming key, value and accepted range; or an unknown key with the valid ones
 */
export function setKey(config: PruneConfig, key: string, value: unknown, source: string): void {
  const validate = CONFIG_KEYS[key];
  if (!validate) {
    throw new UsageError(`${source}: unknown configuration key ${JSON.stringify(key)}; valid keys: ${Object.keys(CONFIG_KEYS).join(", ")}`);
  }
  const range = validate(value);
  if (range !== null) {
    throw new UsageError(`${source}: invalid value ${JSON.stringify(value)} for ${key}: expected ${range}`);
  }
  const path = key.split(".");
  let target = config as unknown as Record<string, unknown>;
  for (const part of path.slice(0, -1)) target = target[part] as Record<string, unknown>;
  target[path[path.length - 1]] = value;
}

/**
 * Merge a `contextPrune`-shaped object into the configuration. Keys the extension knows but
 * condense does not use (e.g. `pruneOn`) are ignored only when `ignoreUnknown` is set (Pi's
 * settings.json is shared with the live extension); in a `--config` file they are errors.
 */
export function mergeObject(config: PruneConfig, object: unknown, source: string, ignoreUnknown: boolean): void {
  if (typeof object !== "object" || object === null || Array.isArray(object)) {
    throw new UsageError(`${source}: expected a JSON object of configuration keys`);
  }
  for (const [key, value] of Object.entries(object)) {
    if ((key === "chainCompression" || key === "purgeErrors") && typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [sub, subValue] of Object.entries(value)) {
        const dotted = `${key}.${sub}`;
        if (!CONFIG_KEYS[dotted] && ignoreUnknown) continue;
        setKey(config, dotted, subValue, source);
      }
      continue;
    }
    if (!CONFIG_KEYS[key] && ignoreUnknown) continue;
    setKey(config, key, value, source);
  }
}

/** Parse `key=value`; the value is JSON when it parses (numbers, booleans, null, arrays), else a string. */
export function parseSetArgument(arg: string): { key: string; value: unknown } {
  const eq = arg.indexOf("=");
  if (eq <= 0) throw new UsageError(`--set ${JSON.stringify(arg)}: expected key=value`);
  const key = arg.slice(0, eq).trim();
  const raw = arg.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a bare string
  }
  return { key, value };
}

export interface ConfigSources {
  /** `--config FILE`. */
  configFile?: string;
  /** `--set key=value`, in order. */
  sets?: string[];
  /** Dedicated flags already mapped to keys (e.g. `--no-chain` → chainCompression.enabled=false). */
  overrides?: Record<string, unknown>;
  env?: NodeJS.ProcessEnv;
}

function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`${what} ${path}: cannot read: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} ${path}: not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Build the configuration from all sources.
 * @throws UsageError on unreadable files or invalid values
 */
export function loadConfig(sources: ConfigSources = {}): PruneConfig {
  const config = defaultConfig();
  const settingsPath = join(agentDir(sources.env), "settings.json");
  if (existsSync(settingsPath)) {
    const settings = readJsonFile(settingsPath, "settings") as Record<string, unknown> | null;
    if (settings && typeof settings === "object" && settings.contextPrune !== undefined) {
      mergeObject(config, settings.contextPrune, `${settingsPath} (contextPrune)`, true);
    }
  }
  if (sources.configFile) {
    const file = readJsonFile(sources.configFile, "--config") as Record<string, unknown> | null;
    const object = file && typeof file === "object" && "contextPrune" in file ? file.contextPrune : file;
    mergeObject(config, object, sources.configFile, false);
  }
  for (const arg of sources.sets ?? []) {
    const { key, value } = parseSetArgument(arg);
    setKey(config, key, value, `--set ${arg}`);
  }
  for (const [key, value] of Object.entries(sources.overrides ?? {})) setKey(config, key, value, `--${key}`);
  if (config.spillThreshold <= config.spillPreviewBytes) {
    // A preview as long as the output would make every spilled stub bigger than what it replaces.
    throw new UsageError(
      `spillThreshold (${config.spillThreshold}) must be greater than spillPreviewBytes (${config.spillPreviewBytes}): ` +
        "a spilled output's stub holds a preview of that many bytes",
    );
  }
  return config;
}
