/**
 * The command line (docs/design.md §2). Each command lives in `commands/`; this file wires them
 * into commander, and turns errors into exit codes: 0 success, 1 runtime failure, 2 usage error or
 * unusable input, 3 metrics threshold crossed.
 */
import { Command, CommanderError } from "commander";
import { CondenseError } from "../util/errors.js";
import type { ExitState } from "./options.js";
import { Output } from "./output.js";
import { registerBudget } from "./commands/budget.js";
import { registerCompact } from "./commands/compact.js";
import { registerCompletion } from "./commands/completion.js";
import { registerInstallSkill } from "./commands/install-skill.js";
import { registerMetrics } from "./commands/metrics.js";
import { registerQuery } from "./commands/query.js";
import { registerRender } from "./commands/render.js";
import { registerReport } from "./commands/report.js";
import { registerRun } from "./commands/run.js";
import { registerUndo } from "./commands/undo.js";
import { packageVersion } from "./version.js";

/** Build the program; commands report their exit code through `exit`. */
export function buildProgram(exit: ExitState): Command {
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
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  registerRun(program, exit);
  registerRender(program, exit);
  registerQuery(program, exit);
  registerMetrics(program, exit);
  registerBudget(program, exit);
  registerCompact(program, exit);
  registerUndo(program, exit);
  registerReport(program, exit);
  registerInstallSkill(program, exit);
  registerCompletion(program, exit);
  return program;
}

/**
 * Run the CLI with `argv` (as `process.argv`).
 * @returns the exit code
 */
export async function main(argv: string[]): Promise<number> {
  const exit: ExitState = { code: 0 };
  const program = buildProgram(exit);
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
