/**
 * Options shared by the commands, declared once (docs/design.md §2): `--json` and `--quiet` on every
 * command; `--config FILE` and repeatable `--set key=value` on the commands that read the pruning
 * configuration. Also the holder through which a command reports its exit code.
 */
import { Option, type Command } from "commander";
import type { ConfigSources } from "../config/config.js";
import { parseTokenCount } from "./units.js";

/** Options every command takes. */
export interface CommonOptions {
  json?: boolean;
  quiet?: boolean;
  raw?: boolean;
}

/** Flags that feed the configuration (`--thinking` and `--no-chain` are declared by the commands that take them). */
export interface ConfigFlags {
  config?: string;
  set?: string[];
  thinking?: string;
  /** commander's `--no-chain` sets `chain: false`. */
  chain?: boolean;
}

/** Holder for the exit code a command decided on. */
export interface ExitState {
  code: number;
}

/** Add --json, --quiet and --raw to a command. */
export function withCommonOptions(command: Command): Command {
  return command
    .addOption(new Option("--json", "print one JSON document on stdout (see README for the schema)"))
    .addOption(new Option("-q, --quiet", "no warnings or progress on stderr"))
    .addOption(new Option("--raw", "print stored text byte for byte even to a terminal (control sequences are escaped there by default)"));
}

/** commander collector for repeatable options. */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Add --config FILE and repeatable --set key=value to a command. */
export function withConfigOptions(command: Command): Command {
  return command
    .option("--config <file>", "JSON file with configuration keys (or a settings.json with contextPrune)")
    .option("--set <key=value>", "set any configuration key (repeatable)", collect, []);
}

/** Map the flags to configuration sources. */
export function configSources(flags: ConfigFlags): ConfigSources {
  const overrides: Record<string, unknown> = {};
  if (flags.thinking) overrides.summarizerThinking = flags.thinking;
  if (flags.chain === false) overrides["chainCompression.enabled"] = false;
  return { configFile: flags.config, sets: flags.set ?? [], overrides };
}

/**
 * A token count flag (`--reserve-tokens`, …) in the one convention (`units.ts`: `16384`, `16k`,
 * `1.2M`), or undefined when absent.
 * @throws UsageError naming the flag, the value and the accepted forms
 */
export function tokensFlag(name: string, value: string | undefined): number | undefined {
  return value === undefined ? undefined : parseTokenCount(name, value);
}
