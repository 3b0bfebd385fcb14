/**
 * `condense metrics <session...>`: counts, sizes and warnings per session, as a table or --json.
 */
import { Option, type Command } from "commander";
import { convertToLlm, projectBranch } from "../../context/projection.js";
import { countSession, type SessionCounts } from "../../report/counts.js";
import { formatWarning, openSession, resolveSessionArgs } from "../../session/index.js";
import { defaultJobs, forEachSession, positiveInt } from "../batch.js";
import { type ExitState, withCommonOptions } from "../main.js";
import { Output } from "../output.js";

interface MetricsOptions {
  jobs?: string;
  json?: boolean;
  quiet?: boolean;
}

interface MetricsRow extends SessionCounts {
  session: string;
  warnings: string[];
}

export function registerMetrics(program: Command, exit: ExitState): void {
  const cmd = program
    .command("metrics")
    .description("context metrics and structural diagnostics of sessions")
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .addOption(new Option("--jobs <n>", "sessions processed at once (default: number of cores)"))
    .addHelpText("after", "\nExamples:\n  condense metrics session.jsonl\n  condense metrics ~/.pi/agent/sessions/ --json");
  withCommonOptions(cmd).action(async (args: string[], options: MetricsOptions) => {
    const out = new Output(options);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const files = await resolveSessionArgs(args);
    const outcomes = await forEachSession(files, jobs, out, "metrics", async (path): Promise<MetricsRow> => {
      const session = await openSession(path, "read");
      const context = convertToLlm(projectBranch(session.branch).map((i) => i.message));
      return {
        session: path,
        ...countSession(session, context),
        warnings: [...session.warnings.map(formatWarning), ...session.problems.map((p) => `${path}: ${p.message}`)],
      };
    });
    const rows = outcomes.filter((o) => o.result).map((o) => o.result!);
    const failures = outcomes.filter((o) => o.error).map((o) => ({ session: o.path, error: o.error! }));
    if (failures.length > 0) exit.code = 1;
    if (options.json) {
      out.printJson({ sessions: rows, failures });
      return;
    }
    for (const r of rows) for (const w of r.warnings) out.warn(w);
    for (const f of failures) out.error(f.error);
    out.print(
      out.table(
        ["session", "entries", "branch", "user", "assistant", "tool calls", "results", "context msgs", "chars", "~tokens"],
        rows.map((r) => [
          shortName(r.session),
          r.entries,
          r.branchEntries,
          r.roles.user ?? 0,
          r.roles.assistant ?? 0,
          r.toolCalls,
          r.toolResults,
          r.contextMessages,
          r.contextChars,
          r.contextTokens,
        ]),
        ["left", "right", "right", "right", "right", "right", "right", "right", "right", "right"],
      ),
    );
  });
}

function shortName(path: string): string {
  const parts = path.split("/");
  return parts[parts.length - 1];
}
