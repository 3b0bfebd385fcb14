/**
 * `condense render <session>`: print the model-visible context of a session (SPEC.md section 7).
 */
import { Option, type Command } from "commander";
import { convertToLlm, projectBranch } from "../../context/projection.js";
import { sizeMessages } from "../../report/counts.js";
import { formatTranscript } from "../../render/transcript.js";
import { formatWarning, openSession, resolveSessionArgs } from "../../session/index.js";
import { UsageError } from "../../util/errors.js";
import { type ExitState, withCommonOptions } from "../main.js";
import { Output } from "../output.js";

interface RenderOptions {
  format: "text" | "json";
  json?: boolean;
  quiet?: boolean;
}

export function registerRender(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("render")
    .description("print the model-visible context of a session after pruning")
    .argument("[session]", "session file, id or id prefix (default: latest session of this directory)")
    .addOption(new Option("--format <format>", "text transcript or the JSON message array").choices(["text", "json"]).default("text"))
    .addHelpText("after", "\nExamples:\n  condense render session.jsonl\n  condense render session.jsonl --format json > context.json");
  withCommonOptions(cmd).action(async (sessionArg: string | undefined, options: RenderOptions) => {
    const out = new Output(options);
    const files = await resolveSessionArgs(sessionArg ? [sessionArg] : []);
    if (files.length !== 1) throw new UsageError(`render takes one session; ${sessionArg} names ${files.length} files`);
    const session = await openSession(files[0], "read");
    for (const w of session.warnings) out.warn(formatWarning(w));
    for (const p of session.problems) out.warn(`${session.path}: ${p.message}`);
    const messages = convertToLlm(projectBranch(session.branch).map((i) => i.message));
    if (options.json) {
      out.printJson({ session: session.path, messages, size: sizeMessages(messages) });
    } else if (options.format === "json") {
      out.printJson(messages);
    } else {
      out.print(formatTranscript(messages, out.c));
    }
  });
}
