/**
 * How `--help` describes an option or argument: its description, then in parentheses its choices
 * and default as a user types them — unquoted (`choices: auto, pi, extension, default: auto`), and
 * no default where it is an empty list (a repeatable option such as `--set`). Commander's own help
 * quotes them as JSON (`default: "auto"`, `default: []`).
 */
import type { Argument, Option } from "commander";

/** A default as the user would type it, or null when there is none worth showing (an empty list). */
function shownDefault(item: Option | Argument): string | null {
  if (item.defaultValueDescription) return item.defaultValueDescription;
  const value: unknown = item.defaultValue;
  if (Array.isArray(value)) return value.length === 0 ? null : value.join(", ");
  return String(value);
}

/** `description (choices: a, b, default: a)`, or the description alone. */
function described(description: string, item: Option | Argument, showDefault: boolean, more: string[] = []): string {
  const extra: string[] = [];
  if (item.argChoices) extra.push(`choices: ${item.argChoices.join(", ")}`);
  const shown = item.defaultValue !== undefined && showDefault ? shownDefault(item) : null;
  if (shown !== null) extra.push(`default: ${shown}`);
  extra.push(...more);
  if (extra.length === 0) return description;
  return description ? `${description} (${extra.join(", ")})` : `(${extra.join(", ")})`;
}

/** Commander's `Help.optionDescription`, with choices and defaults unquoted and an empty-list default left out. */
export function optionDescription(option: Option): string {
  // As commander: a default is shown for options that take a value, and for booleans with a boolean default.
  const showDefault = option.required || option.optional || (option.isBoolean() && typeof option.defaultValue === "boolean");
  const more: string[] = [];
  if (option.presetArg !== undefined && option.optional) more.push(`preset: ${String(option.presetArg)}`);
  if (option.envVar !== undefined) more.push(`env: ${option.envVar}`);
  return described(option.description, option, showDefault, more);
}

/** Commander's `Help.argumentDescription`, likewise. */
export function argumentDescription(argument: Argument): string {
  return described(argument.description, argument, true);
}
