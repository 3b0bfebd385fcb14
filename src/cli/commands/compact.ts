/**
 * `condense compact <session...>` (docs/design.md §10): Pi's own compaction, offline.
 * Per session one Pi-native `compaction` entry is appended after the leaf, with Pi 1.6's cut
 * point, split-turn handling and file tracking, a zero-model structured summary by default or
 * Pi's prompts through a model (`--model`, `--summarizer llm`). Archives run several files at once
 * (`--jobs`; worker threads for the zero-model path); one failing file never stops the others.
 */
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import type { CompactionSettings } from "../../compact/settings.js";
import type { CompactSessionOptions } from "../../pipeline/compact.js";
import type { CompactFileResult } from "../../pipeline/compact-report.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { UsageError } from "../../util/errors.js";
import { type ArchiveOptions, type ArchiveSelection, ndjsonPrinter, selectFiles, withArchiveOptions } from "../archive.js";
import {
  defaultJobs,
  type FileOutcome,
  failedSessionsMessage,
  forEachSession,
  interruptOnSigint,
  positiveInt,
  interruptedMessage,
  settleBatch,
  splitOutcomes,
} from "../batch.js";
import { type CommonOptions, type ExitState, tokensFlag, withCommonOptions } from "../options.js";
import { sentContext } from "../../context/size.js";
import { sentAs } from "../../pipeline/render.js";
import { n, percentChange, sentByName, shortCount } from "../format.js";
import { Output, sessionLabels, wrapWords } from "../output.js";
import type { Column } from "../table.js";
import { parseFraction, parseTokenCount } from "../units.js";
import { withUndo, writtenLine } from "../write-report.js";

/** Version of the `--json` document. */
export const COMPACT_SCHEMA = "condense.compact/2";

interface CompactOptions extends CommonOptions, ArchiveOptions {
  dryRun?: boolean;
  output?: string;
  force?: boolean;
  migrate?: boolean;
  jobs?: string;
  summarizer?: "deterministic" | "llm";
  model?: string;
  thinking?: string;
  instructions?: string;
  ifOver?: string | boolean;
  contextWindow?: string;
  reserveTokens?: string;
  keepRecentTokens?: string;
  compactionEnabled?: string;
}

/** `--if-over` alone: Pi's trigger; with a value: a share of the window in (0, 1], `0.8` or `80%` (README "Units"). */
function ifOverFlag(value: string | boolean | undefined): "pi" | number | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return "pi";
  const v = value.trim().toLowerCase();
  if (v === "pi" || v === "auto") return "pi";
  return parseFraction("--if-over", value, { above0: true });
}

/** The per-session options from the flags. @throws UsageError for a bad value, naming the flag */
function sessionOptions(options: CompactOptions): CompactSessionOptions {
  const flags: Partial<CompactionSettings> = {};
  const reserve = tokensFlag("--reserve-tokens", options.reserveTokens);
  const keep = tokensFlag("--keep-recent-tokens", options.keepRecentTokens);
  if (reserve !== undefined) flags.reserveTokens = reserve;
  if (keep !== undefined) flags.keepRecentTokens = keep;
  if (options.compactionEnabled !== undefined) flags.enabled = options.compactionEnabled === "true";
  const contextWindow = options.contextWindow === undefined ? undefined : parseTokenCount("--context-window", options.contextWindow, { min: 1 });
  if (options.instructions !== undefined && options.instructions.trim() === "") throw new UsageError("--instructions: empty text");
  const llm = options.summarizer === "llm" || (options.summarizer !== "deterministic" && options.model !== undefined);
  return {
    dryRun: !!options.dryRun,
    ...(options.output !== undefined ? { output: options.output } : {}),
    force: !!options.force,
    migrate: !!options.migrate,
    ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
    ...(ifOverFlag(options.ifOver) !== undefined ? { ifOver: ifOverFlag(options.ifOver) } : {}),
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    flags,
    summarizer: llm
      ? { kind: "llm", ...(options.model ? { model: options.model } : {}), ...(options.thinking ? { thinking: options.thinking } : {}) }
      : { kind: "deterministic" },
  };
}

/** The command and its options. */
function declareCompact(program: Command): Command {
  return program
    .command("compact")
    .description(COMMAND_SUMMARIES.compact.description)
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .option("--dry-run", "compute everything, write nothing")
    .option("--output <file>", "write the original bytes plus the compaction entry to FILE; the input stays untouched")
    .option("--migrate", "rewrite v1/v2 sessions as v3 first (after a backup), as Pi does on open")
    .option(
      "--force",
      "overwrite an existing --output file or migration backup; write even if the last tool calls look still running or Pi (or another process) has the session open",
    )
    .option("--jobs <n>", "sessions processed at once (default: number of cores)")
    .addOption(
      new Option("--summarizer <kind>", "deterministic (zero-model summary, the default) or llm (Pi's prompts, the session's model)").choices([
        "deterministic",
        "llm",
      ]),
    )
    .option("--model <provider/id>", "write the summary with this model (implies --summarizer llm)")
    .addOption(
      new Option("--thinking <level>", "thinking level of the summary requests (default: the session's)").choices([
        "off",
        "minimal",
        "low",
        "medium",
        "high",
        "xhigh",
      ]),
    )
    .option("--instructions <text>", "focus for the summary, as /compact <instructions> (stored on the entry)")
    .option(
      "--if-over [fraction]",
      "compact only sessions over Pi's auto-compaction trigger (context > window − reserveTokens, or an overflow error), or over FRACTION of the window",
    )
    .option("--context-window <tokens>", "context window of the session's model (default: pi-ai's model registry)")
    .option("--reserve-tokens <n>", "compaction.reserveTokens (default: Pi's settings, else 16384)")
    .option("--keep-recent-tokens <n>", "compaction.keepRecentTokens (default: Pi's settings, else 20000)")
    .addOption(new Option("--compaction-enabled <bool>", "compaction.enabled: whether Pi auto-compacts (used by --if-over)").choices(["true", "false"]))
    .addHelpText(
      "after",
      "\nSettings are read as Pi reads them: $PI_CODING_AGENT_DIR/settings.json, then <session cwd>/.pi/settings.json (a trusted project).\n" +
        "\nExamples:\n  condense compact session.jsonl --dry-run\n  condense compact ~/.pi/agent/sessions/ --if-over --jobs 4\n" +
        '  condense compact session.jsonl --model anthropic/claude-haiku-4-5 --instructions "keep the migration plan"',
    );
}

export function registerCompact(program: Command, exit: ExitState): void {
  withCommonOptions(withArchiveOptions(declareCompact(program))).action(async (args: string[], options: CompactOptions) => {
    const out = new Output(options);
    const started = Date.now();
    // `--if-over FILE`: commander took the session for the optional fraction.
    if (typeof options.ifOver === "string" && !/^\s*[-+.\d]/.test(options.ifOver) && !["pi", "auto"].includes(options.ifOver.trim().toLowerCase())) {
      args = [options.ifOver, ...args];
      options.ifOver = true;
    }
    const task = sessionOptions(options);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const selection = selectFiles(await resolveSessionArgs(args), options);
    const files = selection.files;
    if (task.output !== undefined) {
      await (await import("../../session/commit.js")).checkOutputPath(task.output, files, { force: task.force, inPlace: "compact it in place" });
    }
    const interrupt = interruptOnSigint();
    let outcomes: FileOutcome<CompactFileResult>[];
    try {
      outcomes = await compactAll(selection, task, { jobs, out, signal: interrupt.signal, ndjson: options.ndjson });
    } finally {
      interrupt.release();
    }
    const split = splitOutcomes(outcomes);
    const { results, failures } = split;
    if (!options.ndjson) for (const r of results) for (const w of r.warnings) out.warn(w);
    const interrupted = settleBatch(out, exit, split, selection.total, interrupt.signal);
    if (options.ndjson) {
      if (interrupted) out.error(interruptedMessage(split, files.length, task.dryRun ? "dry-run" : "write"));
      return;
    }
    if (options.json) {
      out.printJson({
        schema: COMPACT_SCHEMA,
        sessions: results.map(withUndo),
        failures: failures.map(({ session, error }) => ({ session, error })),
        ...(interrupted ? { interrupted } : {}),
        wallMs: Date.now() - started,
      });
      return;
    }
    if (results.length > 0) out.print(formatReport(results, out));
    for (const r of results) {
      if (r.backup) out.info(`${r.session}: migrated from v${r.migratedFrom} to v3; the original is at ${r.backup}`);
      const wrote = writtenLine({ session: r.session, written: r.written, entries: r.written ? 1 : 0, bytes: r.bytesAppended, migratedFrom: r.migratedFrom });
      if (wrote) out.print(wrote);
    }
    for (const r of results) if (r.wouldRefuse) out.warn(`a real run would not write: ${r.wouldRefuse}`);
    // Last: after Ctrl-C, one line says what was done and what was left untouched; else, as run says it, how many failed.
    const failed = failedSessionsMessage(failures.length, files.length, "were processed");
    if (interrupted) out.error(interruptedMessage(split, files.length, task.dryRun ? "dry-run" : "write"));
    else if (failed) out.error(failed);
  });
}

/**
 * Compact every file: several at once (`--jobs`), in worker threads for the zero-model path (a
 * model call waits on the network, and needs Ctrl-C here); with a model, the models are resolved
 * once and a single session shows a spinner.
 */
async function compactAll(
  selection: ArchiveSelection,
  task: CompactSessionOptions,
  how: { jobs: number; out: Output; signal: AbortSignal; ndjson?: boolean },
): Promise<FileOutcome<CompactFileResult>[]> {
  const { files } = selection;
  const { out, signal } = how;
  // Loaded when the command runs (pi-ai's model registry is large): start-up stays small.
  const [{ CompactionModels }, { COMPACT_SESSION_MODULE, compactSession }] = await Promise.all([
    import("../../compact/model.js"),
    import("../../pipeline/compact.js"),
  ]);
  const models = task.summarizer.kind === "llm" ? new CompactionModels(task.summarizer) : undefined;
  const spinner = files.length === 1 && models ? out.spinner("compacting") : null;
  const onProgress = spinner
    ? (text: string) => {
        spinner.text = text;
      }
    : undefined;
  try {
    return await forEachSession<CompactFileResult>(files, out, {
      jobs: how.jobs,
      label: "compacting",
      work: (path) => compactSession(path, task, { signal, models, onProgress }),
      remote: models ? undefined : { module: COMPACT_SESSION_MODULE, fn: "compactSession", options: task },
      signal,
      onOutcome: ndjsonPrinter(out, COMPACT_SCHEMA, selection, how.ndjson),
      onOrdered: how.ndjson
        ? (o) => {
            for (const w of o.result?.warnings ?? []) out.warn(w);
          }
        : undefined,
    });
  } finally {
    spinner?.stop();
  }
}

const STATUS: Record<CompactFileResult["status"], string> = {
  compacted: "compacted",
  "already-compacted": "already compacted",
  "nothing-to-compact": "nothing to compact",
  "below-trigger": "below the trigger",
  "unknown-window": "window unknown",
};

const WIDE: Column[] = [
  { head: "session", fit: true, minWidth: 24 },
  { head: "Pi would compact" },
  { head: "first kept entry" },
  { head: "summarized msgs", align: "right" },
  { head: "files r/m", align: "right" },
  { head: "context ~tokens", align: "right" },
  { head: "result" },
];

/** Where the wide table does not fit (a long label, a split turn) but 100 columns or more do: the cut stays in view. */
const MEDIUM: Column[] = [
  { head: "session", fit: true, minWidth: 12 },
  { head: "Pi", align: "left" },
  { head: "first kept entry" },
  { head: "context ~tokens", align: "right" },
  { head: "result" },
];

const COMPACT: Column[] = [
  { head: "session", fit: true, minWidth: 12 },
  { head: "Pi", align: "left" },
  { head: "context ~tokens", align: "right" },
  { head: "result" },
];

function statusOf(r: CompactFileResult): string {
  if (r.status !== "compacted") return STATUS[r.status];
  if (r.dryRun) return "would compact";
  return r.written && r.written !== r.session ? `wrote ${r.written}` : "compacted";
}

function contextCell(r: CompactFileResult, short: boolean): string {
  const f = short ? shortCount : n;
  const { before, after } = sentContext(r.context, r.target);
  if (r.status !== "compacted") return f(before.tokens);
  return `${f(before.tokens)} → ${f(after.tokens)} (${percentChange(before.tokens, after.tokens)})${r.fits === false ? " over" : ""}`;
}

/** The human report: one row per session (fitted to the terminal), the reasons below. */
function formatReport(results: CompactFileResult[], out: Output): string {
  const labels = sessionLabels(results);
  const wouldCompact = (r: CompactFileResult) =>
    r.trigger.piWouldCompact === null ? "?" : r.trigger.piWouldCompact ? (r.trigger.reason === "overflow" ? "yes (overflow)" : "yes") : "no";
  const firstKept = (r: CompactFileResult) =>
    r.firstKeptEntryId ? `${r.firstKeptEntryId}${r.firstKeptLine !== null ? ` (line ${r.firstKeptLine})` : ""}${r.isSplitTurn ? ", split turn" : ""}` : "—";
  const wide = results.map((r, i) => [
    labels[i],
    wouldCompact(r),
    firstKept(r),
    r.messagesToSummarize === null ? "—" : `${n(r.messagesToSummarize)}${r.turnPrefixMessages ? ` + ${n(r.turnPrefixMessages)}` : ""}`,
    r.firstKeptEntryId ? `${r.readFiles.length}/${r.modifiedFiles.length}` : "—",
    contextCell(r, false),
    statusOf(r),
  ]);
  const medium = results.map((r, i) => [labels[i], wouldCompact(r), firstKept(r), contextCell(r, true), statusOf(r)]);
  const narrow = results.map((r, i) => [labels[i], wouldCompact(r), contextCell(r, true), statusOf(r)]);
  const width = out.width;
  const table = out.fitted([
    { columns: WIDE, rows: wide },
    { columns: MEDIUM, rows: medium },
    { columns: COMPACT, rows: narrow },
  ]);
  const first = results[0];
  const senders = new Set(results.map((r) => sentByName(sentAs(r.target))));
  const legend =
    (table.layout === 0 ? "summarized msgs = messages before the cut (+ the split turn's early part) · " : "Pi = would Pi compact on its own · ") +
    `context = what Pi sends (${senders.size === 1 ? [...senders][0] : "each session's Pi"}), before → after · ` +
    `keepRecentTokens ${n(first.settings.keepRecentTokens)}, reserveTokens ${n(first.settings.reserveTokens)}`;
  const lines = [table.text, out.c.dim(wrapWords(legend, width))];
  for (const r of results) {
    if (r.reason && r.status !== "compacted") lines.push(`${r.session}: ${r.reason}`);
    if (r.fits === false) {
      lines.push(
        out.c.yellow(
          `${r.session}: after compaction Pi's estimate of the context (${n(r.piEstimate.after)} tokens) still exceeds window − reserveTokens (${n((r.contextWindow ?? 0) - r.settings.reserveTokens)}): ` +
            "the kept recent messages are too large — prune their tool outputs first (`condense run`), or lower --keep-recent-tokens",
        ),
      );
    }
    if (r.usage)
      lines.push(
        `${r.session}: summary by ${r.summarizer}: ${n(r.usage.input)} input + ${n(r.usage.output)} output tokens${r.usage.cost > 0 ? ` · $${r.usage.cost.toFixed(4)}` : ""}`,
      );
  }
  return lines.join("\n");
}
