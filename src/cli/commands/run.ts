/**
 * `condense [run] <session...>`: the main job (docs/design.md §2, §5, §6). Per session: plan in
 * memory, then write sidecars atomically, then append the entries in one locked write — or, with
 * `--output FILE`, write the original bytes plus the new entries to FILE. `--dry-run` writes nothing.
 */
import { existsSync } from "node:fs";
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { loadConfig } from "../../config/config.js";
import type { RunFileResult, RunHooks } from "../../pipeline/run.js";
import type { TargetChoice } from "../../pipeline/target.js";
import type { FlushProgress } from "../../prune/flush.js";
import { NoSuchSessionError, resolveSessionArgs } from "../../session/locate.js";
import { summarizerKind } from "../../summarize/select.js";
import { UsageError } from "../../util/errors.js";
import { type ArchiveOptions, type ArchiveSelection, ndjsonPrinter, selectFiles, withArchiveOptions } from "../archive.js";
import {
  defaultJobs,
  type FileOutcome,
  failedSessionsMessage,
  forEachSession,
  type InterruptedJson,
  interruptedJson,
  interruptedMessage,
  interruptOnSigint,
  positiveInt,
  settleBatch,
  splitOutcomes,
} from "../batch.js";
import { type CommonOptions, type ConfigFlags, configSources, type ExitState, withCommonOptions, withConfigOptions } from "../options.js";
import { extensionOffWarning, warnIgnoredProjectSettings } from "../extension-status.js";
import { formatEstimate } from "../estimate-table.js";
import { Output } from "../output.js";
import { suggestCommand } from "../suggest.js";
import { failedBatchesLine, formatRunReport } from "../run-report.js";
import type { RunTaskOptions } from "../run-task.js";
import { withUndo, writtenLine } from "../write-report.js";

/** Schema of the `--ndjson` lines (each holds one session's result, the element of `--json`'s `sessions`). */
export const RUN_SCHEMA = "condense.run/1";

interface RunOptions extends CommonOptions, ConfigFlags, ArchiveOptions {
  dryRun?: boolean;
  summarizer?: "deterministic" | "llm";
  model?: string;
  fallbackModel?: string;
  concurrency?: string;
  jobs?: string;
  force?: boolean;
  migrate?: boolean;
  output?: string;
  target: TargetChoice;
  estimate?: boolean;
  /** `--no-cache` sets it false. */
  cache?: boolean;
}

/** The command and its options. */
function declareRun(program: Command): Command {
  const cmd = program
    .command("run", { isDefault: true })
    .description(COMMAND_SUMMARIES.run.description)
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .option("--dry-run", "compute everything, write nothing (not even sidecars)")
    .option("--estimate", "count the batches, input tokens and expected cost a model would be sent; no model is called, nothing written")
    .addOption(new Option("--summarizer <kind>", "deterministic (no model) or llm").choices(["deterministic", "llm"]))
    .option("--model <provider/id>", "summarizer model (implies --summarizer llm)")
    .option("--fallback-model <provider/id>", "model for batches the summarizer model fails on transiently (default: the session's model)")
    .addOption(new Option("--thinking <level>", "summarizer thinking level").choices(["off", "minimal", "low", "medium", "high", "xhigh"]))
    .addOption(new Option("--concurrency <n>", "parallel summarizer calls").default("4", "4"))
    .option("--no-cache", "neither read nor store model answers in the summary cache")
    .option("--jobs <n>", "sessions processed at once (default: number of cores)");
  withArchiveOptions(withConfigOptions(cmd))
    .option("--no-chain", "skip chain compression")
    .option("--migrate", "rewrite v1/v2 sessions as v3 first (after a backup), as Pi does on open")
    .option(
      "--force",
      "overwrite an existing --output file or migration backup; write even if the last tool calls look still running or Pi (or another process) has the session open",
    )
    .option("--output <file>", "write the original bytes plus the new entries to FILE; the input stays untouched")
    .addOption(targetOption())
    .addHelpText(
      "after",
      "\nExamples:\n  condense session.jsonl\n  condense run session.jsonl --target pi --output condensed.jsonl\n  condense ~/.pi/agent/sessions/ --dry-run --json\n" +
        "  condense session.jsonl --model anthropic/claude-haiku-4-5 --estimate",
    );
  return cmd;
}

export function registerRun(program: Command, exit: ExitState): void {
  withCommonOptions(declareRun(program)).action(async (args: string[], options: RunOptions) => {
    const out = new Output(options);
    const started = Date.now();
    const config = loadConfig(configSources(options));
    const concurrency = positiveInt("--concurrency", options.concurrency, 4);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const selection = selectFiles(
      await resolveSessionArgs(args).catch((error: unknown) => {
        throw mistypedCommand(program, args, error);
      }),
      options,
    );
    const { files } = selection;
    if (options.output !== undefined) await (await import("../../session/commit.js")).checkOutputPath(options.output, files, { force: !!options.force });
    await warnIgnoredProjectSettings(out, files);
    // The extension's entries alone shrink Pi's context only with the extension switched on.
    if (!options.quiet && options.target === "extension") {
      const off = await extensionOffWarning(files, "run");
      if (off) out.warn(off);
    }
    if (summarizerKind({ kind: options.summarizer, model: options.model }, config) === "deterministic" && (options.thinking || options.fallbackModel)) {
      out.warn(`${options.thinking ? "--thinking" : "--fallback-model"} has no effect with the deterministic summarizer (name a model with --model)`);
    }
    const interrupt = interruptOnSigint();
    const task: RunTaskOptions = {
      config,
      summarizer: { kind: options.summarizer, model: options.model, fallbackModel: options.fallbackModel, cache: options.cache !== false },
      concurrency,
      dryRun: !!options.dryRun || !!options.estimate,
      estimate: !!options.estimate,
      migrate: !!options.migrate,
      force: !!options.force,
      output: options.output,
      target: options.target,
    };
    let outcomes: FileOutcome<RunFileResult>[];
    try {
      outcomes = await condenseAll(selection, task, { jobs, out, signal: interrupt.signal, ndjson: options.ndjson });
    } finally {
      interrupt.release();
    }
    const split = splitOutcomes(outcomes);
    const counts = closingCounts(split);
    const interrupted = settleBatch(out, exit, split, selection.total, interrupt.signal) && interruptedJson(counts);
    // A batch whose summary failed is a runtime failure of its session (the others still processed):
    // a run the model never answered must not pass for one with nothing to do.
    if (exit.code === 0 && split.results.some((r) => r.batches.failed > 0)) exit.code = 1;
    if (options.ndjson) {
      for (const r of split.results) printFailedBatches(out, r);
      if (interrupted) out.error(interruptedMessage(counts, files.length, task.dryRun ? "dry-run" : "write"));
      return;
    }
    printOutcome(out, {
      ...split,
      files: files.length,
      wallMs: Date.now() - started,
      estimate: !!options.estimate,
      output: options.output,
      dryRun: task.dryRun,
      interrupted,
      counts,
    });
  });
}

/**
 * Run the main job on every file of the selection. One session: its warnings and the model's
 * progress as they come. Several: in worker threads under `--jobs`, each session's warnings
 * printed in input order once it is done (so the output does not depend on which finishes
 * first), and with `--ndjson` its line as soon as it is done.
 */
async function condenseAll(
  selection: ArchiveSelection,
  task: RunTaskOptions,
  how: { jobs: number; out: Output; signal: AbortSignal; ndjson?: boolean },
): Promise<FileOutcome<RunFileResult>[]> {
  // Loaded when the command runs: start-up and the other commands do not pay for them.
  const [{ runSession }, { RUN_TASK_MODULE, runTask }] = await Promise.all([import("../../pipeline/run.js"), import("../run-task.js")]);
  const { out, signal } = how;
  const single = selection.files.length === 1;
  return forEachSession<RunFileResult>(selection.files, out, {
    jobs: how.jobs,
    label: "condensing",
    work: single ? (path) => runSession(path, { ...task, signal }, runHooks(out, true)) : (path, context) => runTask(path, task, context),
    remote: { module: RUN_TASK_MODULE, fn: "runTask", options: task },
    signal,
    onOutcome: ndjsonPrinter(out, RUN_SCHEMA, selection, how.ndjson),
    onOrdered: single
      ? undefined
      : (o) => {
          for (const w of o.result?.warnings ?? o.warnings ?? []) out.warn(w);
        },
  });
}

/**
 * The error for session arguments that resolve to nothing: when the first is not a path, names no
 * session (an ambiguous id prefix is said as such) and reads like a mistyped command
 * (`condense metric`, `condense rnu`), say so instead of "no such session". Not after an explicit
 * `condense run`, whose arguments can only be sessions.
 */
function mistypedCommand(program: Command, args: string[], error: unknown): unknown {
  const word = args[0];
  if (!(error instanceof NoSuchSessionError) || word === undefined || existsSync(word)) return error;
  const typedRun = program.args.indexOf("run");
  if (typedRun !== -1 && typedRun < program.args.lastIndexOf(word)) return error;
  const names = program.commands.map((c) => c.name());
  const meant = suggestCommand(word, names);
  if (!meant) return error;
  return new UsageError(`unknown command "${word}" — did you mean \`condense ${meant}\`? (No session goes by that name either.) See condense --help`);
}

/** What a run over its files came to, for {@link printOutcome}. */
interface RunOutcome {
  results: RunFileResult[];
  failures: { session: string; error: string }[];
  untouched: string[];
  files: number;
  wallMs: number;
  estimate: boolean;
  /** The `--output` file, when given. */
  output?: string;
  /** `--dry-run` or `--estimate`: nothing is written. */
  dryRun: boolean;
  /** After Ctrl-C (see batch.ts `settleBatch`). */
  interrupted?: InterruptedJson;
  /** The sessions as the closing lines count them ({@link closingCounts}, made once per run). */
  counts: ReturnType<typeof closingCounts>;
}

/**
 * The JSON document, or the report (the estimate's with `--estimate`), what each write added and
 * how to undo it, the migration notices, what a dry run predicts the real run would refuse, a
 * closing failure count — and after Ctrl-C, last, the line that says what was done.
 */
function printOutcome(out: Output, run: RunOutcome): void {
  const { results, failures, files, wallMs, interrupted, counts } = run;
  if (out.json) {
    out.printJson({
      sessions: results.map(withUndo),
      failures: failures.map(({ session, error }) => ({ session, error })),
      warnings: out.warnings,
      ...(interrupted ? { interrupted } : {}),
      wallMs,
    });
    for (const r of results) printFailedBatches(out, r);
    return;
  }
  if (results.length > 0) out.print(run.estimate ? formatEstimate(results, out) : formatRunReport(results, out, wallMs, run.output, failures.length));
  for (const r of results) {
    if (r.backup) out.info(`${r.session}: migrated from v${r.migratedFrom} to v3; the original is at ${r.backup}`);
    const wrote = writtenLine({ session: r.session, written: r.written, entries: r.entriesAppended, bytes: r.bytesAppended, migratedFrom: r.migratedFrom });
    if (wrote) out.print(wrote);
  }
  for (const r of results) if (r.wouldRefuse) out.warn(`a real run would not write: ${r.wouldRefuse}`);
  for (const r of results) printFailedBatches(out, r);
  // Failures were printed first and may have scrolled away: count them once more at the end, with
  // the sessions whose batches failed (their lines are just above), as the line after Ctrl-C does.
  const failed = failedSessionsMessage(counts.failures.length, files, "were processed");
  if (failed && !interrupted) out.error(failed);
  // Last: after Ctrl-C, one line says what was done and what was left untouched.
  if (interrupted) out.error(interruptedMessage(counts, files, run.dryRun ? "dry-run" : "write"));
}

/**
 * The sessions as the closing lines and `--json`'s `interrupted` count them: one whose batches
 * failed (some or all; {@link failedBatchesLine} says which and what was written) is failed, not
 * done — it makes the run exit 1.
 */
function closingCounts(split: { results: RunFileResult[]; failures: unknown[]; untouched: string[] }): {
  results: RunFileResult[];
  failures: unknown[];
  untouched: string[];
} {
  const failedBatches = split.results.filter((r) => r.batches.failed > 0);
  return {
    results: split.results.filter((r) => r.batches.failed === 0),
    failures: [...split.failures, ...failedBatches],
    untouched: split.untouched,
  };
}

/** On stderr (in every format): how many of the session's batches failed and why (exit 1). */
function printFailedBatches(out: Output, r: RunFileResult): void {
  const line = failedBatchesLine(r);
  if (line) out.error(line);
}

/** `--target`: whom run writes for (pipeline/target.ts). */
function targetOption(): Option {
  return new Option(
    "--target <target>",
    "pi: also write Pi's own context edits, so stock Pi sends the pruned context; extension: only the pi-condense extension's entries; auto: pi unless Pi's settings show the extension installed and switched on",
  )
    .choices(["auto", "pi", "extension"])
    .default("auto");
}

/** Warnings, summarizer notices and (for a single session on a TTY) a progress spinner. */
function runHooks(out: Output, showProgress: boolean): RunHooks {
  let spinner: ReturnType<Output["spinner"]> = null;
  return {
    warn: (message) => out.warn(message),
    notice: (message) => {
      spinner?.clear();
      out.warn(message);
      spinner?.render();
    },
    progress: (name, local) => {
      if (!showProgress || local) return null;
      const shown = out.spinner(`summarizing with ${name}`);
      spinner = shown;
      if (!shown) return null;
      return {
        update: (p) => {
          shown.text = progressLine(name, p);
        },
        stop: () => {
          shown.stop();
          spinner = null;
        },
      };
    },
  };
}

/** `summarizing with p/m: 12/96 batches · 1 failed · 45.2k tokens · $0.0123` */
export function progressLine(model: string, p: FlushProgress): string {
  const tokens = p.usage.input + p.usage.output;
  const shown = tokens >= 1000 ? `${(tokens / 1000).toFixed(1)}k` : String(tokens);
  const parts = [`${p.done}/${p.total} batches`];
  if (p.failed > 0) parts.push(`${p.failed} failed`);
  parts.push(`${shown} tokens`);
  if (p.usage.cost > 0) parts.push(`$${p.usage.cost.toFixed(4)}`);
  return `summarizing with ${model}: ${parts.join(" · ")}`;
}
