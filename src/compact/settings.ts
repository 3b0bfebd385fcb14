/**
 * Pi's compaction settings (Pi 1.6 `SettingsManager.getCompactionSettings`, `SETTINGS_DEFAULTS`;
 * docs/design.md §10 "Settings"): `compaction.enabled / reserveTokens / keepRecentTokens` from
 * Pi's merged settings (global, then the project's `.pi/settings.json` when Pi trusts the project:
 * config/pi-settings.ts), a token setting of the session's model in
 * `compaction.modelOverrides["provider/id"]` winning over the plain one, then condense's flags.
 * Also Pi's `retry` settings, which its summary requests honour.
 */
import { existsSync } from "node:fs";
import { readPiSettings } from "../config/pi-settings.js";
import type { Session } from "../session/session.js";
import { formatModelRef, sessionModelRef } from "../summarize/model-resolve.js";
import { UsageError } from "../util/errors.js";

export interface CompactionSettings {
  /** Auto-compaction on (Pi's trigger); manual compaction works either way. */
  enabled: boolean;
  /** Tokens kept free for the model's answer: Pi compacts when context > window − reserveTokens. */
  reserveTokens: number;
  /** Tokens of the newest messages kept verbatim after the cut. */
  keepRecentTokens: number;
}

/** Pi 1.6's defaults (`SETTINGS_DEFAULTS.compaction`). */
export const DEFAULT_COMPACTION_SETTINGS: CompactionSettings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };

/** Pi's retry policy for summary requests (`SettingsManager.getRetrySettings`). */
export interface RetrySettings {
  enabled: boolean;
  maxRetries: number;
  baseDelayMs: number;
  maxAgentDelayMs: number;
}

/** Pi 1.6's defaults (`SETTINGS_DEFAULTS.retry`; `maxAgentDelayMs` is pi-ai's `DEFAULT_MAX_AGENT_RETRY_DELAY_MS`). */
export const DEFAULT_RETRY_SETTINGS: RetrySettings = { enabled: true, maxRetries: 3, baseDelayMs: 2000, maxAgentDelayMs: 60_000 };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function tokenSetting(value: unknown, name: string, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new UsageError(`${where}: invalid ${name} ${JSON.stringify(value)}: expected a non-negative integer (tokens)`);
  }
  return value;
}

/**
 * The compaction settings for one session.
 * @param merged Pi's merged settings object
 * @param model `provider/id` of the session's model (for `modelOverrides`), or null
 * @param flags values from the command line (win over everything)
 * @param where where `merged` came from, for error messages (e.g. the settings paths)
 * @throws UsageError when a token setting is not a non-negative integer, or an override is not an object (as Pi throws)
 */
export function compactionSettings(
  merged: Record<string, unknown>,
  model: string | null,
  flags: Partial<CompactionSettings> = {},
  where = "settings.json",
): CompactionSettings {
  const compaction = isObject(merged.compaction) ? merged.compaction : {};
  const overrides = compaction.modelOverrides;
  const override = model !== null && isObject(overrides) ? overrides[model] : undefined;
  if (override !== undefined && !isObject(override)) {
    throw new UsageError(`${where}: compaction.modelOverrides["${model}"] must be an object, got ${JSON.stringify(override)}`);
  }
  const token = (field: "reserveTokens" | "keepRecentTokens"): number => {
    const plain = tokenSetting(compaction[field], `compaction.${field}`, where);
    const own = override ? tokenSetting(override[field], `compaction.modelOverrides["${model}"].${field}`, where) : undefined;
    return own ?? plain ?? DEFAULT_COMPACTION_SETTINGS[field];
  };
  return {
    enabled: flags.enabled ?? (compaction.enabled === undefined ? DEFAULT_COMPACTION_SETTINGS.enabled : Boolean(compaction.enabled)),
    reserveTokens: flags.reserveTokens ?? token("reserveTokens"),
    keepRecentTokens: flags.keepRecentTokens ?? token("keepRecentTokens"),
  };
}

/** Pi's retry settings from the merged settings (missing or non-numeric values take the defaults). */
export function retrySettings(merged: Record<string, unknown>): RetrySettings {
  const retry = isObject(merged.retry) ? merged.retry : {};
  const num = (v: unknown, d: number) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : d);
  return {
    enabled: retry.enabled === undefined ? DEFAULT_RETRY_SETTINGS.enabled : Boolean(retry.enabled),
    maxRetries: num(retry.maxRetries, DEFAULT_RETRY_SETTINGS.maxRetries),
    baseDelayMs: num(retry.baseDelayMs, DEFAULT_RETRY_SETTINGS.baseDelayMs),
    maxAgentDelayMs: num(retry.maxAgentDelayMs, DEFAULT_RETRY_SETTINGS.maxAgentDelayMs),
  };
}

/** Pi's settings for one session, as `compact` and `budget` use them. */
export interface SessionCompactionSettings {
  settings: CompactionSettings;
  retry: RetrySettings;
  /** `provider/id` of the session's model (the key of `modelOverrides`), or null. */
  model: string | null;
  /** The settings files that exist, global first. */
  files: string[];
  /** Settings files that could not be read (Pi ignores them too), as `path: ignored: why`. */
  warnings: string[];
}

/**
 * Read Pi's settings for a session: the global file, then the project's — the project being the
 * session's header `cwd` when that folder exists (where Pi resumes it), else the current folder.
 * @throws UsageError for an invalid compaction setting (see {@link compactionSettings})
 */
export function sessionCompactionSettings(session: Pick<Session, "header" | "branch">, flags: Partial<CompactionSettings> = {}): SessionCompactionSettings {
  const cwd = typeof session.header?.cwd === "string" && existsSync(session.header.cwd) ? session.header.cwd : process.cwd();
  const pi = readPiSettings({ cwd });
  const ref = sessionModelRef(session.branch);
  const model = ref ? formatModelRef(ref) : null;
  const files = [pi.globalPath, ...(pi.projectLoaded ? [pi.projectPath] : [])].filter((p) => existsSync(p));
  return {
    settings: compactionSettings(pi.merged, model, flags, files.join(" + ") || "settings.json"),
    retry: retrySettings(pi.merged),
    model,
    files,
    warnings: pi.errors.map((e) => `${e.path}: ignored: ${e.message}`),
  };
}
