/**
 * What shell completion offers, read from the commander program itself (commander's `Help`:
 * `visibleCommands`, `visibleOptions`, each option's flags and choices, each command's registered
 * arguments), so a new command or option completes without touching the scripts.
 */
import type { Argument, Command, Option } from "commander";

/** What a value (an option's or a positional argument's) completes to. */
export type ValueKind = "none" | "file" | "choices" | "command";

/** One option as completion sees it. */
export interface OptionSpec {
  /** `-q`, `--quiet` (short first when both). */
  flags: string[];
  description: string;
  /** True when the option takes a value (`--output <file>`). */
  takesValue: boolean;
  /** What its value completes to (`none` for a flag). */
  value: ValueKind;
  choices: string[];
}

/** One command as completion sees it. */
export interface CommandSpec {
  name: string;
  description: string;
  options: OptionSpec[];
  /** What positional arguments complete to (the first argument's kind; variadic or not). */
  args: ValueKind;
  argChoices: string[];
}

/** The whole program. */
export interface CompletionSpec {
  /** The executable's name, `condense`. */
  name: string;
  /** Options of the program itself (`--version`, `--help`). */
  options: OptionSpec[];
  commands: CommandSpec[];
  /** The command that runs when the first word is not a command (`run`), or null. */
  defaultCommand: string | null;
}

/** Placeholder names whose values are paths: `<file>`, `<session>`, `[sessions...]`. */
const PATH_NAMES = /^(file|files|path|paths|dir|session|sessions)$/;

function valueKind(name: string | undefined, choices: readonly string[] | undefined): ValueKind {
  if (choices && choices.length > 0) return "choices";
  if (name && PATH_NAMES.test(name)) return "file";
  return "none";
}

function optionSpec(option: Option): OptionSpec {
  const flags = [option.short, option.long].filter((f): f is string => !!f);
  const takesValue = option.required || option.optional;
  const placeholder = /[<[]([^>\]]+?)(?:\.\.\.)?[>\]]/.exec(option.flags)?.[1];
  return {
    flags,
    description: option.description,
    takesValue,
    value: takesValue ? valueKind(placeholder, option.argChoices) : "none",
    choices: option.argChoices ? [...option.argChoices] : [],
  };
}

function argsKind(command: Command, commandNames: string[]): { args: ValueKind; argChoices: string[] } {
  const first: Argument | undefined = command.registeredArguments[0];
  if (!first) return { args: "none", argChoices: [] };
  // commander's implicit `help [command]`
  if (command.name() === "help" && first.name() === "command") return { args: "command", argChoices: commandNames };
  const choices = first.argChoices ? [...first.argChoices] : [];
  return { args: valueKind(first.name(), choices), argChoices: choices };
}

/**
 * Read the completion spec from a built program (commands and options as `--help` shows them;
 * hidden ones left out).
 */
export function completionSpec(program: Command): CompletionSpec {
  const help = program.createHelp();
  const commands = help.visibleCommands(program);
  const names = commands.map((c) => c.name());
  // commander keeps the `isDefault` command's name in a private field; no public getter exists.
  const defaultField: unknown = Reflect.get(program, "_defaultCommandName");
  const defaultName = typeof defaultField === "string" ? defaultField : null;
  return {
    name: program.name(),
    options: help.visibleOptions(program).map(optionSpec),
    commands: commands.map((c) => ({
      name: c.name(),
      description: c.description(),
      options: help.visibleOptions(c).map(optionSpec),
      ...argsKind(c, names),
    })),
    defaultCommand: defaultName && names.includes(defaultName) ? defaultName : null,
  };
}
