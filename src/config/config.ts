/**
 * Pruning configuration (docs/design.md §3; keys and defaults are the seed's).
 *
 * Sources, later wins: built-in defaults → `contextPrune` in `$PI_CODING_AGENT_DIR/settings.json`
 * → `--config FILE` → `--set key=value` and dedicated flags. Invalid values are usage errors that
 * name the key, the value and the accepted range; they are never silently replaced.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { agentDir } from "../session/locate.js";
import { readRegularFileSync } from "../util/files.js";
import { errnoWords, UsageError } from "../util/errors.js";

const THINKING = ["default", "off", "minimal", "low", "medium", "high", "xhigh"] as const;
const BATCHING = ["turn", "agent-message"] as const;

export type ThinkingSetting = (typeof THINKING)[number];
export type BatchingMode = (typeof BATCHING)[number];

/** null = valid, else the accepted range (for the error message). */
type Validator = (value: unknown) => string | null;

/** One configuration key: its built-in default and what values it accepts. */
interface KeySpec<T> {
  default: T;
  check: Validator;
}

const spec = <T>(fallback: T, check: Validator): KeySpec<T> => ({ default: fallback, check });
const int = (fallback: number, min: number) => spec(fallback, (v) => (typeof v === "number" && Number.isInteger(v) && v >= min ? null : `an integer ≥ ${min}`));
const bool = (fallback: boolean) => spec(fallback, (v) => (typeof v === "boolean" ? null : "true or false"));
const oneOf = <const C extends readonly string[]>(choices: C, fallback: C[number]) =>
  spec<C[number]>(fallback, (v) => (typeof v === "string" && choices.includes(v) ? null : `one of ${choices.join(", ")}`));
const stringList = (fallback: string[]) =>
  spec(fallback, (v) => (Array.isArray(v) && v.every((s) => typeof s === "string") ? null : "a JSON array of strings"));
const fractionOrNull = (fallback: number | null) =>
  spec(fallback, (v) => (v === null || (typeof v === "number" && v > 0 && v <= 1) ? null : "a number in (0, 1], or null to disable"));
const modelRef = (fallback: string) =>
  spec(fallback, (v) => (v === "default" || (typeof v === "string" && /^[^/\s]+\/\S+$/.test(v)) ? null : `"default" or "provider/model-id"`));

/**
 * Every configuration key, declared once: its default (docs/design.md §3) and its validator, nested
 * as in `contextPrune`. {@link PruneConfig} is derived from it; dotted names (`chainCompression.enabled`)
 * address the nested ones in `--set` and in error messages.
 */
const KEYS = {
  summarizerModel: modelRef("default"),
  summarizerThinking: oneOf(THINKING, "default"),
  batchingMode: oneOf(BATCHING, "turn"),
  minBatchChars: int(1000, 0),
  dedupByContentHash: bool(true),
  spillThreshold: int(65536, 1),
  spillPreviewBytes: int(2048, 0),
  protectedTools: stringList([]),
  protectedPaths: stringList(["**/skills/**/*.md"]),
  recoveryGraceTurns: int(3, 0),
  autoBudgetThreshold: fractionOrNull(0.735),
  budgetTurnDelta: fractionOrNull(0.04),
  chainCompression: {
    enabled: bool(true),
    rollingWindow: int(3, 0),
    fuseRangeSummary: bool(true),
    stripFinalAssistantThinking: bool(true),
  },
  purgeErrors: { enabled: bool(true), cooldownTurns: int(2, 0), minArgChars: int(500, 0) },
  summarizerIdleTimeoutMs: int(20000, 1),
  summarizerMaxTimeoutMs: int(180000, 1),
};

type ConfigOf<T> = { [K in keyof T]: T[K] extends KeySpec<infer V> ? V : ConfigOf<T[K]> };

/** The pruning configuration (every key of {@link KEYS}, with its value). */
export type PruneConfig = ConfigOf<typeof KEYS>;

type Spec = KeySpec<unknown> | { [key: string]: Spec };
const isKeySpec = (spec: Spec): spec is KeySpec<unknown> => typeof (spec as KeySpec<unknown>).check === "function";

/** Dotted key → validator, in declaration order. */
export const CONFIG_KEYS: Record<string, Validator> = {};
(function flatten(specs: Record<string, Spec>, prefix: string): void {
  for (const [name, spec] of Object.entries(specs)) {
    if (isKeySpec(spec)) CONFIG_KEYS[prefix + name] = spec.check;
    else flatten(spec, `${prefix}${name}.`);
  }
})(KEYS, "");

/** Built-in defaults (docs/design.md §3), fresh arrays and objects on every call. */
export function defaultConfig(): PruneConfig {
  const build = (specs: Record<string, Spec>): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(specs).map(([name, spec]) => {
        if (!isKeySpec(spec)) return [name, build(spec)];
        return [name, Array.isArray(spec.default) ? [...spec.default] : spec.default];
      }),
    );
  return build(KEYS) as PruneConfig;
}

/**
 * Set one dotted key after validating it.
 * @param source where the value came from, for the error message ("--set", a file path)
 * @throws UsageError naming key, value and accepted range; or an unknown key with the valid ones
 */
export function setKey(config: PruneConfig, key: string, value: unknown, source: string): void {
  const validate = Object.hasOwn(CONFIG_KEYS, key) ? CONFIG_KEYS[key] : undefined;
  if (!validate) {
    throw new UsageError(`${source}: unknown configuration key ${JSON.stringify(key)}; valid keys: ${Object.keys(CONFIG_KEYS).join(", ")}`);
  }
  const range = validate(value);
  if (range !== null) {
    throw new UsageError(`${source}: invalid value ${JSON.stringify(value)} for ${key}: expected ${range}`);
  }
  const path = key.split(".");
  let target: Record<string, unknown> = config;
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
    const group = Object.hasOwn(KEYS, key) && !isKeySpec(KEYS[key as keyof typeof KEYS]);
    if (group && typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [sub, subValue] of Object.entries(value)) {
        const dotted = `${key}.${sub}`;
        if (!Object.hasOwn(CONFIG_KEYS, dotted) && ignoreUnknown) continue;
        setKey(config, dotted, subValue, source);
      }
      continue;
    }
    if (!Object.hasOwn(CONFIG_KEYS, key) && ignoreUnknown) continue;
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

/** A JSON file's value; a leading byte-order mark is dropped, as Pi's settings reader does (`stripBom`). */
function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readRegularFileSync(path, "utf8").replace(/^\uFEFF/, "");
  } catch (error) {
    throw new UsageError(`${what} ${path}: cannot read: ${errnoWords(error)}`);
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
