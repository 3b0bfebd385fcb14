/**
 * `condense render <session>`: print the model-visible context of a session after pruning
 * (docs/design.md §7); `--dry-run` renders it as it would be after `run`, computed in memory.
 */
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { loadConfig } from "../../config/config.js";
import { contextSize, type ContextSize } from "../../context/size.js";
import type { RenderAs } from "../../pipeline/render.js";
import { decideTarget, runFor as decideRunFor, type TargetChoice } from "../../pipeline/target.js";
import type { Rendered } from "../../render/render.js";
import { transcriptPieces } from "../../render/transcript.js";
import { formatLabel, sessionLabel } from "../../session/label.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { UsageError } from "../../util/errors.js";
import { extensionOffWarning, warnIgnoredProjectSettings } from "../extension-status.js";
import { n, sentLine } from "../format.js";
import { fitLine, Output, wrapWords } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, withConfigOptions } from "../options.js";

interface RenderOptions extends CommonOptions, ConfigFlags {
  format: "text" | "json";
  as: RenderAs | "auto";
  dryRun?: boolean;
  stats?: boolean;
  summarizer?: "deterministic" | "llm";
  model?: string;
  target: TargetChoice;
}

/** `--as`: whose context to show — by default what the user's Pi sends. */
function asOption(): Option {
  return new Option(
    "--as <context>",
    "auto: what your Pi sends (pi-only unless Pi's settings show pi-condense installed and switched on); extension: what Pi sends with pi-condense switched on; pi-only: what stock Pi sends without it",
  )
    .choices(["auto", "extension", "pi-only"])
    .default("auto");
}

export function registerRender(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("render")
    .description(COMMAND_SUMMARIES.render.description)
    .argument("[session]", "session file, id or id prefix (default: latest session of this directory)")
    .addOption(new Option("--format <format>", "text transcript or the JSON message array").choices(["text", "json"]).default("text"))
    .addOption(asOption())
    .option("--dry-run", "render the session as it would be after `condense run`, nothing written")
    .option("--stats", "print the context's size now and after `run`, and after projection and each phase, instead of the messages")
    .addOption(new Option("--summarizer <kind>", "with --dry-run: deterministic or llm").choices(["deterministic", "llm"]))
    .option("--model <provider/id>", "with --dry-run: summarizer model")
    .addOption(
      new Option("--target <target>", "whom the run after which the context is shown writes for (as run --target: pi, extension, auto)")
        .choices(["auto", "pi", "extension"])
        .default("auto"),
    );
  withConfigOptions(cmd)
    .option("--no-chain", "with --dry-run: skip chain compression")
    .addHelpText(
      "after",
      "\nExamples:\n  condense render session.jsonl\n  condense render session.jsonl --dry-run --stats\n  condense render session.jsonl --format json > context.json\n" +
        "  condense render session.jsonl --as pi-only --dry-run --stats",
    );
  withCommonOptions(cmd).action(async (sessionArg: string | undefined, options: RenderOptions) => {
    const out = new Output(options);
    const config = loadConfig(configSources(options));
    const files = await resolveSessionArgs(sessionArg ? [sessionArg] : []);
    if (files.length !== 1) throw new UsageError(`render takes one session; ${sessionArg} names ${files.length} files`);
    // Loaded when the command runs: start-up and the other commands do not pay for them.
    const [{ renderAfterRun, renderSession, sentAs, sentMessages }, { sessionView }, { formatWarning, migrationWarnings, openSession }, { strandedWarnings }] =
      await Promise.all([
        import("../../pipeline/render.js"),
        import("../../pipeline/view.js"),
        import("../../session/open.js"),
        import("../../pipeline/stranded.js"),
      ]);
    const session = await openSession(files[0], "read");
    await warnIgnoredProjectSettings(out, files);
    for (const w of session.warnings) out.warn(formatWarning(w));
    for (const p of session.problems) out.warn(`${session.path}: ${p.message}`);
    // Whom `run` would write for: the plan behind --dry-run and the "after" figure.
    const runFor = decideRunFor(options.target, session.path, session.header?.cwd);
    // Whose context to show: by default the Pi the user has, as `run --target auto` decides it.
    const usersPi = options.target === "auto" ? runFor.target : decideTarget("auto", session.header?.cwd);
    const as = options.as === "auto" ? sentAs(usersPi) : options.as;
    const dryRun = options.dryRun ? { kind: options.summarizer, model: options.model, runFor } : null;
    const view = sessionView(session, config);
    // condense's entries that a later Pi write left off the branch: Pi does not see them, so neither does this render.
    for (const w of strandedWarnings(session, view.indexer)) out.warn(w);
    if (options.json || options.stats || options.dryRun) for (const w of migrationWarnings(session)) out.warn(w); // figures after `run`, which needs --migrate
    const rendered = await renderSession(view, dryRun, as);
    // The extension's context, asked for while the user's Pi does not run the extension: say whose it is.
    if (as === "extension" && usersPi.used === "pi" && !options.quiet) {
      const off = await extensionOffWarning([session.path], "render");
      if (off) out.warn(off);
    }
    if (options.json || options.stats) {
      // The one "before → after" (as `run`, `metrics` and `budget` print it): the context Pi sends
      // now, and after `run` — the --dry-run plan when there is one, else a deterministic plan.
      const after = dryRun ? rendered : await renderAfterRun(view.fork(), undefined, runFor);
      const context = { before: contextSize(sentMessages(view.rendered, as)), after: contextSize(sentMessages(after, as)) };
      const stats = renderStats(rendered);
      const label = sessionLabel(session);
      const head = { session: session.path, label, dryRun: !!options.dryRun, as };
      // --stats asks for the sizes only: `--stats --json` is `--stats --format json`; `--json` alone, the whole render.
      if (options.json && !options.stats) {
        out.printJson({ ...head, target: runFor.target, context, messages: rendered.after, stats, diagnostics: rendered.diagnostics });
        return;
      }
      if (options.json || options.format === "json") out.printJson({ ...head, context, stats });
      else out.print(formatStats({ label: formatLabel(label), path: session.path }, context, stats, { dryRun: !!options.dryRun, as }, out));
    } else if (options.format === "json") out.printJson(rendered.after);
    else out.printPieces(transcriptPieces(rendered.afterAgent, out.c));
    for (const d of rendered.diagnostics) out.warn(`diagnostic ${d.kind}: ${d.detail}`);
  });
}

/** One row of `--stats`: the size after projection, then after each phase. */
export interface RenderStat extends ContextSize {
  phase: string;
}

/** Sizes after projection and after each phase (`context/size.ts`: what Pi sends, as Pi counts it). */
export function renderStats(rendered: Rendered): RenderStat[] {
  return [{ phase: "projection", ...contextSize(rendered.beforeAgent) }, ...rendered.phases.map((p) => ({ phase: p.phase, ...contextSize(p.agentMessages) }))];
}

function signed(x: number): string {
  return x === 0 ? "0" : x > 0 ? `+${n(x)}` : `−${n(-x)}`;
}

/**
 * `--stats`: who (the label cut to the terminal, the path whole: it may be the only place that
 * names the file condense picked), the context now → after `run`, and the size after each phase.
 */
function formatStats(
  head: { label: string; path: string },
  context: { before: ContextSize; after: ContextSize },
  stats: RenderStat[],
  mode: { dryRun: boolean; as: RenderAs },
  out: Output,
): string {
  const width = out.width;
  const shown = `${mode.dryRun ? "after `condense run` (--dry-run)" : "as the session is now"}${mode.as === "pi-only" ? ", as stock Pi sends it (no extension)" : ""}`;
  const table = out.table(
    ["after", "messages", "chars", "~tokens", "change"],
    stats.map((s, i) => [s.phase, s.messages, s.chars, s.tokens, i === 0 ? "" : signed(s.tokens - stats[i - 1].tokens)]),
    ["left", "right", "right", "right", "right"],
  );
  return [
    ...(head.label !== "" ? [fitLine(head.label, width)] : []),
    head.path,
    wrapWords(sentLine(mode.as, context), width),
    wrapWords(`render ${shown}, phase by phase (chars and ~tokens as Pi estimates them, ceil(chars / 4) per message):`, width),
    table,
  ].join("\n");
}
