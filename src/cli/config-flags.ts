/**
 * Configuration flags shared by the commands that prune (`run`, `render --dry-run`, `metrics`,
 * `budget`): `--config FILE`, repeatable `--set key=value`, `--thinking`, `--no-chain`.
 */
import type { ConfigSources } from "../config/config.js";

export interface ConfigFlags {
  config?: string;
  set?: string[];
  thinking?: string;
  /** commander's `--no-chain` sets `chain: false`. */
  chain?: boolean;
}

/** commander collector for repeatable options. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Map the flags to configuration sources. */
export function configSources(flags: ConfigFlags): ConfigSources {
  const overrides: Record<string, unknown> = {};
  if (flags.thinking) overrides.summarizerThinking = flags.thinking;
  if (flags.chain === false) overrides["chainCompression.enabled"] = false;
  return { configFile: flags.config, sets: flags.set ?? [], overrides };
}
