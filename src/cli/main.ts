/**
 * The command line (docs/design.md §2). Each command lives in `commands/`; this file wires them
 * into commander, and turns errors into exit codes: 0 success, 1 runtime failure, 2 usage error or
 * unusable input, 3 metrics threshold crossed.
 */
import { Command, CommanderError } from "commander";
import { CondenseError } from "../util/errors.js";
import type { ExitState } from "./options.js";
import { Output } from "./output.js";
import { COMMAND_SUMMARIES, type CommandName, type CommandSummary } from "./command-list.js";
import { argumentDescription, optionDescription } from "./help.js";
import { withCommonOptions } from "./options.js";
import { raiseTieringBudget } from "./tiering.js";
import { packageVersion } from "./version.js";

/** How a command adds itself to the program. */
type Register = (program: Command, exit: ExitState) => void;

/** Each command's module, loaded only when the command is the one run (or all are needed). */
const LOADERS: Record<CommandName, () => Promise<Register>> = {
  run: async () => (await import("./commands/run.js")).registerRun,
  render: async () => (await import("./commands/render.js")).registerRender,
  query: async () => (await import("./commands/query.js")).registerQuery,
  metrics: async () => (await import("./commands/metrics.js")).registerMetrics,
  budget: async () => (await import("./commands/budget.js")).registerBudget,
  compact: async () => (await import("./commands/compact.js")).registerCompact,
  undo: async () => (await import("./commands/undo.js")).registerUndo,
  report: async () => (await import("./commands/report.js")).registerReport,
  "install-skill": async () => (await import("./commands/install-skill.js")).registerInstallSkill,
  completion: async () => (await import("./commands/completion.js")).registerCompletion,
};

/**
 * The command `argv` runs: its name; `"all"` when every command must be complete (`help <command>`,
 * `completion`); null for the top-level help or version, which need only the summaries.
 */
export function commandOf(args: string[]): CommandName | "all" | null {
  const first = args.find((a) => !a.startsWith("-"));
  if (first === undefined) return args.some((a) => ["-h", "--help", "-V", "--version"].includes(a)) ? null : "run";
  if (first === "help" || first === "completion") return "all";
  return Object.hasOwn(COMMAND_SUMMARIES, first) ? (first as CommandName) : "run";
}

/**
 * Build the program; commands report their exit code through `exit`.
 * @param complete the commands registered with their options and action (default: all); the others
 *   get their name, description and arguments only, which is all the top-level help shows
 */
export async function buildProgram(exit: ExitState, complete: CommandName[] | "all" = "all"): Promise<Command> {
  const program = new Command();
  program
    .name("condense")
    .description(
      "Offline context pruning for Pi coding-agent sessions: replays the pi-condense pipeline on a " +
        "session file, appends the pruning entries so Pi resumes it small, and answers questions about it.",
    )
    .version(packageVersion())
    .usage("[command] [options]   (no command: condense <session...> runs `run`)")
    .addHelpText(
      "after",
      "\nThe main job is the default command: `condense <session...>` is `condense run <session...>`:\n" +
        "it summarizes the unpruned tool output and appends the pruning entries, so Pi resumes the\n" +
        "session small.\n" +
        "\nExamples:\n" +
        "  condense session.jsonl                  prune a session in place (see condense run --help)\n" +
        "  condense session.jsonl --dry-run        what it would do, nothing written\n" +
        "  condense render session.jsonl --stats   what Pi sends now and after a run\n" +
        "  condense query t3                       the full output behind a pruned ref\n" +
        "  condense metrics ~/.pi/agent/sessions/  context health of an archive",
    )
    .showHelpAfterError("(run with --help for usage)")
    // Inherited by every command: defaults and choices unquoted, no empty-list default.
    .configureHelp({ optionDescription, argumentDescription })
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  const names = Object.keys(COMMAND_SUMMARIES) as CommandName[];
  const wanted = new Set(complete === "all" ? names : complete);
  const registers = await Promise.all(names.map((name) => (wanted.has(name) ? LOADERS[name]() : null)));
  names.forEach((name, i) => {
    const register = registers[i];
    if (register) register(program, exit);
    else summaryOnly(program, name);
  });
  return program;
}

/** A command as the top-level help shows it: name, description, arguments, `[options]`. */
function summaryOnly(program: Command, name: CommandName): void {
  const summary: CommandSummary = COMMAND_SUMMARIES[name];
  const command = program.command(name, { isDefault: summary.isDefault }).description(summary.description);
  if (summary.args) command.arguments(summary.args);
  if (!summary.noOptions) withCommonOptions(command);
}

/**
 * Run the CLI with `argv` (as `process.argv`).
 * @returns the exit code
 */
export async function main(argv: string[]): Promise<number> {
  raiseTieringBudget();
  const exit: ExitState = { code: 0 };
  const chosen = commandOf(argv.slice(2));
  const program = await buildProgram(exit, chosen === "all" ? "all" : chosen === null ? [] : [chosen]);
  // With --json, a failure before the command printed its document still gives one JSON document.
  const json = argv.slice(2).includes("--json");
  const fail = (message: string, code: number): number => {
    if (json) new Output({ json: true }).printJson({ error: { message, exitCode: code } });
    return code;
  };
  try {
    await program.parseAsync(argv);
    return exit.code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.exitCode === 0) return 0;
      return fail(error.message.replace(/^error: /, ""), 2);
    }
    const out = new Output({});
    if (error instanceof CondenseError) {
      out.error(error.message);
      return fail(error.message, error.exitCode);
    }
    const message = String((error as Error)?.message ?? error);
    const detail = process.env.CONDENSE_DEBUG ? ((error as Error)?.stack ?? message) : message;
    out.error(`unexpected failure: ${detail}${process.env.CONDENSE_DEBUG ? "" : " (set CONDENSE_DEBUG=1 for the stack)"}`);
    return fail(`unexpected failure: ${message}`, 1);
  }
}
