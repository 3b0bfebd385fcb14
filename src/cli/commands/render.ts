/**
 * `condense render <session>`: print the model-visible context of a session after pruning
 * (docs/design.md §7); `--dry-run` renders it as it would be after `run`, computed in memory.
 */
import { Option, type Command } from "commander";
import { loadConfig } from "../../config/config.js";
import { type RenderAs, renderSession } from "../../pipeline/render.js";
import { runFor as decideRunFor, type TargetChoice } from "../../pipeline/target.js";
import { sessionView } from "../../pipeline/view.js";
import { sizeMessages } from "../../report/counts.js";
import type { Rendered } from "../../render/render.js";
import { formatTranscript } from "../../render/transcript.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { formatWarning, openSession } from "../../session/open.js";
import { UsageError } from "../../util/errors.js";
import { extensionOffWarning } from "../extension-status.js";
import { Output } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, withConfigOptions } from "../options.js";

interface RenderOptions extends CommonOptions, ConfigFlags {
  format: "text" | "json";
  as: RenderAs;
  dryRun?: boolean;
  stats?: boolean;
  summarizer?: "deterministic" | "llm";
  model?: string;
  target: TargetChoice;
}

export function registerRender(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("render")
    .description("print the model-visible context of a session after pruning")
    .argument("[session]", "session file, id or id prefix (default: latest session of this directory)")
    .addOption(new Option("--format <format>", "text transcript or the JSON message array").choices(["text", "json"]).default("text"))
    .addOption(
      new Option("--as <context>", "extension: what Pi sends with pi-condense switched on; pi-only: what stock Pi sends without it")
        .choices(["extension", "pi-only"])
        .default("extension"),
    )
    .option("--dry-run", "render the session as it would be after `condense run`, nothing written")
    .option("--stats", "print sizes (chars and chars/4 tokens) after projection and after each phase instead of the messages")
    .addOption(new Option("--summarizer <kind>", "with --dry-run: deterministic or llm").choices(["deterministic", "llm"]))
    .option("--model <provider/id>", "with --dry-run: summarizer model")
    .addOption(
      new Option("--target <target>", "with --dry-run: whom the run writes for (as run --target: pi, extension, auto)")
        .choices(["auto", "pi", "extension"])
        .default("auto"),
    );
  withConfigOptions(cmd)
    .option("--no-chain", "with --dry-run: skip chain compression")
    .addHelpText(
      "after",
      "\nExamples:\n  condense render session.jsonl\n  condense render session.jsonl --dry-run --stats\n  condense render session.jsonl --format json > context.json\n" +
        "  condense render session.jsonl --as pi-only --dry-run --stats   # what stock Pi sends after condense run",
    );
  withCommonOptions(cmd).action(async (sessionArg: string | undefined, options: RenderOptions) => {
    const out = new Output(options);
    const config = loadConfig(configSources(options));
    const files = await resolveSessionArgs(sessionArg ? [sessionArg] : []);
    if (files.length !== 1) throw new UsageError(`render takes one session; ${sessionArg} names ${files.length} files`);
    const session = await openSession(files[0], "read");
    for (const w of session.warnings) out.warn(formatWarning(w));
    for (const p of session.problems) out.warn(`${session.path}: ${p.message}`);
    const runFor = options.dryRun ? decideRunFor(options.target, session.path, session.header?.cwd) : null;
    const dryRun = runFor ? { kind: options.summarizer, model: options.model, runFor } : null;
    const rendered = await renderSession(sessionView(session, config), dryRun, options.as);
    // What run writes shrinks Pi's context only with the extension switched on (--as pi-only shows the other case).
    if (options.as === "extension" && !options.quiet) {
      const off = await extensionOffWarning([session.path], "render");
      if (off) out.warn(off);
    }
    const stats = renderStats(rendered);
    if (options.json) {
      out.printJson({
        session: session.path,
        dryRun: !!options.dryRun,
        ...(runFor ? { target: runFor.target } : {}),
        as: options.as,
        messages: rendered.after,
        stats,
        diagnostics: rendered.diagnostics,
      });
      return;
    }
    if (options.stats) {
      out.print(
        out.table(
          ["after", "messages", "chars", "~tokens", "change"],
          stats.map((s, i) => [s.phase, s.messages, s.chars, s.tokens, i === 0 ? "" : signed(s.chars - stats[i - 1].chars)]),
          ["left", "right", "right", "right", "right"],
        ),
      );
    } else if (options.format === "json") out.printJson(rendered.after);
    else out.print(formatTranscript(rendered.afterAgent, out.c));
    for (const d of rendered.diagnostics) out.warn(`diagnostic ${d.kind}: ${d.detail}`);
  });
}

/** One row of `--stats`: the size after projection, then after each phase. */
export interface RenderStat {
  phase: string;
  messages: number;
  /** Characters of the JSON message array. */
  chars: number;
  /** round(chars / 4). */
  tokens: number;
}

/** Sizes after projection and after each phase (converted messages, as the provider gets them). */
export function renderStats(rendered: Rendered): RenderStat[] {
  return [
    { phase: "projection", messages: rendered.before.length, ...sizeMessages(rendered.before) },
    ...rendered.phases.map((p) => ({ phase: p.phase, messages: p.messages.length, ...sizeMessages(p.messages) })),
  ];
}

function signed(n: number): string {
  return n === 0 ? "0" : n > 0 ? `+${n.toLocaleString("en-US")}` : `−${(-n).toLocaleString("en-US")}`;
}
