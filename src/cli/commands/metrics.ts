/**
 * `condense metrics <session...>` (docs/design.md §1, §9): context health, the rendered context
 * before and after pruning, the last reported usage, the pruner index and the structural
 * diagnostics of each session — one table row per session plus totals, or `--json`
 * (docs/json-schemas.md). Limits turn it into a CI gate: exit 3 when one is crossed.
 *
 * Exit codes: 1 when any file failed (the others are still reported; one unusable file given
 * alone is 2, as for every command); otherwise 3 when a limit is crossed; otherwise 0.
 */
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { loadConfig } from "../../config/config.js";
import { sentContext } from "../../context/size.js";
import { checkGates, describeCrossing, type GateCrossing, type GateLimits } from "../../report/gates.js";
import { DIAGNOSTIC_KINDS, FAULT_KINDS, type DiagnosticName } from "../../report/diagnostics.js";
import type { SessionMetrics } from "../../report/session-metrics.js";
import { TOKENIZER_NAMES, type TokenizerName } from "../../report/tokenizer.js";
import { UsageError } from "../../util/errors.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { type ArchiveOptions, ndjsonPrinter, readArchiveLines, selectFiles, withArchiveOptions } from "../archive.js";
import {
  defaultJobs,
  type FileOutcome,
  failedSessionsMessage,
  forEachSession,
  interruptedJson,
  interruptedMessage,
  interruptOnSigint,
  positiveInt,
  splitOutcomes,
} from "../batch.js";
import type { MetricsTaskOptions } from "../metrics-task.js";
import { n as fmt, percentChange, shortCount } from "../format.js";
import { warnIgnoredProjectSettings } from "../extension-status.js";
import { Output, sessionLabels, wrapWords } from "../output.js";
import type { Column } from "../table.js";
import { parseFraction, parseTokenCount } from "../units.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, withConfigOptions } from "../options.js";

/** Version of the `--json` document; bumped only on an incompatible change. */
export const METRICS_SCHEMA = "condense.metrics/2";

interface MetricsOptions extends CommonOptions, ConfigFlags, ArchiveOptions {
  jobs?: string;
  merge?: boolean;
  tokenizer?: string;
  maxFrontierGap?: string;
  maxChainShare?: string;
  maxOpenThinking?: string;
  maxContext?: string;
  failOnDiagnostics?: boolean;
}

/** Totals over the sessions that were processed. */
export interface MetricsTotals {
  sessions: number;
  failed: number;
  contextBeforeTokens: number;
  contextAfterTokens: number;
  /** Stock Pi's context (`context.piOnly`), summed. */
  contextPiOnlyBeforeTokens: number;
  contextPiOnlyAfterTokens: number;
  /** Each session's figure for the target `run` would pick (stock Pi's or the extension's), summed: what the table shows. */
  contextShownBeforeTokens: number;
  contextShownAfterTokens: number;
  reclaimedTokens: number;
  reportedTokens: number;
  openCycleThinkingTokens: number;
  frontierGapTokens: number;
  largestChainSharePctMax: number;
  records: number;
  summaries: number;
  aliases: number;
  spills: number;
  chains: number;
  summarizerCalls: number;
  summarizerInputTokens: number;
  summarizerOutputTokens: number;
  summarizerCost: number;
  diagnosticFaults: number;
  diagnostics: Record<DiagnosticName, number>;
}

export function registerMetrics(program: Command, exit: ExitState): void {
  const cmd = program
    .command("metrics")
    .description(COMMAND_SUMMARIES.metrics.description)
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .addOption(new Option("--jobs <n>", "sessions processed at once, in worker threads (default: number of cores)"))
    .addOption(
      new Option("--tokenizer <name>", "token estimate: chars4 = Pi's ceil(chars / 4) per message; o200k = real tokens of the same text")
        .choices(TOKENIZER_NAMES)
        .default("chars4"),
    )
    .option("--max-frontier-gap <tokens>", "fail (exit 3) when unsummarized tool results past the frontier exceed this (20000, 20k)")
    .option("--max-chain-share <share>", "fail when the largest chain or open segment exceeds this share of the branch (0.8 or 80%)")
    .option("--max-open-thinking <tokens>", "fail when thinking after the last text-only reply exceeds this (5000, 5k)")
    .option(
      "--max-context <tokens>",
      "fail when the context your Pi sends after `run` (the table's figure: stock Pi's unless the extension is on) exceeds this (120000, 120k)",
    )
    .option("--fail-on-diagnostics", "fail on any structural diagnostic (orphan, unanswered call, duplicate or reused id, split, unresolved range)");
  withArchiveOptions(withConfigOptions(cmd))
    .option("--merge", "the arguments are the --ndjson outputs of every shard: print the document one run over the whole archive prints")
    .addHelpText(
      "after",
      "\nA limit is crossed when the value is greater than it. Exit codes: 0 ok; 1 a file failed (the others\n" +
        "are still reported); 2 usage error, or one session that cannot be used; 3 a limit was crossed (and no file failed).\n" +
        "\nExamples:\n  condense metrics session.jsonl\n  condense metrics ~/.pi/agent/sessions/ --json\n" +
        "  condense metrics sessions/ --max-frontier-gap 20k --max-chain-share 80% --fail-on-diagnostics\n" +
        "  condense metrics sessions/ --shard 2/8 --ndjson > part-2.ndjson   (one of 8 machines)\n" +
        "  condense metrics --merge part-*.ndjson --json                     (the whole archive)",
    );
  withCommonOptions(cmd).action(async (args: string[], options: MetricsOptions) => {
    const out = new Output(options);
    const limits = parseLimits(options);
    const tokenizer = (options.tokenizer ?? "chars4") as TokenizerName;
    if (options.merge && (options.shard !== undefined || options.ndjson)) throw new UsageError("--merge takes neither --shard nor --ndjson");
    const { outcomes, total, aborted } = options.merge
      ? { ...mergeShards(args), aborted: false }
      : await measureUntilInterrupted(args, options, out, tokenizer);
    const split = splitOutcomes(outcomes);
    const { results: rows, failures } = split;
    const crossed: GateCrossing[] = rows.flatMap((r) => checkGates(r, limits));
    if (failures.length > 0) exit.code = total === 1 ? failures[0].exitCode : 1;
    else if (crossed.length > 0) exit.code = 3;
    // After Ctrl-C: the sessions measured are reported, the line at the end says what was left out.
    const interrupted = aborted ? interruptedJson(split) : undefined;
    if (interrupted) exit.code = 130;
    if (options.ndjson) {
      for (const c of crossed) out.error(`limit crossed: ${describeCrossing(c)}`);
      if (interrupted) out.error(interruptedMessage(split, outcomes.length, "read"));
      return;
    }
    for (const r of rows) for (const w of r.warnings) out.warn(w);
    for (const f of failures) out.error(f.error);
    for (const c of crossed) out.error(`limit crossed: ${describeCrossing(c)}`);
    const totals = totalsOf(rows, failures.length);
    if (options.json) {
      out.printJson({
        schema: METRICS_SCHEMA,
        tokenizer: rows[0]?.tokenizer ?? tokenizer,
        sessions: rows,
        totals,
        failures: failures.map(({ session, error }) => ({ session, error })),
        gates: { limits, crossed },
        ...(interrupted ? { interrupted } : {}),
      });
      return;
    }
    if (rows.length > 0) {
      const width = out.width;
      const table = formatTable(rows, totals, out);
      out.print(table.text);
      out.print(out.c.dim(wrapWords(table.layout === 1 ? COMPACT_LEGEND : WIDE_LEGEND, width)));
      out.print(out.c.dim(wrapWords(bothLine(rows, totals), width)));
    }
    const details = formatDiagnostics(rows);
    if (details) out.print(details);
    const closing = interrupted ? interruptedMessage(split, total, "read") : failedSessionsMessage(failures.length, total, "were measured");
    if (closing) out.error(closing);
  });
}

/** {@link measure} under Ctrl-C: after it no session is started, and `aborted` says so. */
async function measureUntilInterrupted(
  args: string[],
  options: MetricsOptions,
  out: Output,
  tokenizer: TokenizerName,
): Promise<{ outcomes: FileOutcome<SessionMetrics>[]; total: number; aborted: boolean }> {
  const interrupt = interruptOnSigint();
  try {
    const measured = await measure(args, options, out, { tokenizer, signal: interrupt.signal });
    return { ...measured, aborted: interrupt.signal.aborted };
  } finally {
    interrupt.release();
  }
}

/**
 * Measure the sessions (of this shard): in worker threads under `--jobs`; with `--ndjson` each
 * session's line as soon as it is done, and its warnings and failure on stderr in input order.
 * @returns the outcomes, and how many files the arguments name in all (every shard)
 */
async function measure(
  args: string[],
  options: MetricsOptions,
  out: Output,
  how: { tokenizer: TokenizerName; signal: AbortSignal },
): Promise<{ outcomes: FileOutcome<SessionMetrics>[]; total: number }> {
  const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
  const taskOptions: MetricsTaskOptions = { config: loadConfig(configSources(options)), tokenizer: how.tokenizer };
  const selection = selectFiles(await resolveSessionArgs(args), options);
  await warnIgnoredProjectSettings(out, selection.files);
  // Loaded when the command runs: start-up and the other commands do not pay for it.
  const { METRICS_TASK_MODULE, metricsTask } = await import("../metrics-task.js");
  // After Ctrl-C no session is started; the ones measured are reported.
  const outcomes = await forEachSession<SessionMetrics>(selection.files, out, {
    jobs,
    label: "metrics",
    work: (path) => metricsTask(path, taskOptions),
    remote: { module: METRICS_TASK_MODULE, fn: "metricsTask", options: taskOptions },
    signal: how.signal,
    onOutcome: ndjsonPrinter(out, METRICS_SCHEMA, selection, options.ndjson),
    onOrdered: options.ndjson
      ? (o) => {
          for (const w of o.result?.warnings ?? []) out.warn(w);
          if (o.error !== undefined) out.error(o.error);
        }
      : undefined,
  });
  return { outcomes, total: selection.total };
}

/** What the merged document, its table, its totals and its gates read of every session's metrics. */
const MERGE_REQUIRED = [
  "session",
  "label",
  "target.used",
  "context.before.tokens",
  "context.after.tokens",
  "context.piOnly.before.tokens",
  "context.piOnly.after.tokens",
  "diagnostics",
];

/** The outcomes of every shard's `--ndjson` output, in the archive's order. */
function mergeShards(paths: string[]): { outcomes: FileOutcome<SessionMetrics>[]; total: number } {
  return readArchiveLines<SessionMetrics>(paths, METRICS_SCHEMA, MERGE_REQUIRED);
}

const WIDE_LEGEND =
  "context = what Pi sends now → after `condense run`, for the target run would pick (stock Pi, or Pi with the pi-condense extension) · reported = provider-reported tokens of the last request · " +
  "open think = thinking after the last final reply · chain % = largest chain's share of the branch · " +
  "gap = unsummarized tool output past the frontier · rec/sum/ali/spl/chn = index records, summaries, dedup aliases, spills, chains";
const COMPACT_LEGEND =
  "context = what Pi sends now → after `condense run`, for the target run would pick · gap = unsummarized tool output past the frontier · " +
  "chain = largest chain's share of the branch · diag = structural faults (--json for everything)";

/** Stock Pi's figure next to the extension's, for what the table shows of only one: `stock Pi a → b (-x%) · with the extension c → d (-y%)`. */
function bothLine(rows: SessionMetrics[], t: MetricsTotals): string {
  const change = (a: number, b: number) => `${fmt(a)} → ${fmt(b)} (${percentChange(a, b)})`;
  const targets = new Set(rows.map((r) => `${r.target.used}: ${r.target.reason}`));
  const why = targets.size === 1 ? ` · run would write for ${[...targets][0]}` : "";
  return `${rows.length > 1 ? "in total: " : ""}stock Pi ${change(t.contextPiOnlyBeforeTokens, t.contextPiOnlyAfterTokens)} · with the extension ${change(t.contextBeforeTokens, t.contextAfterTokens)}${why}`;
}

const tokens = (flag: string, value: string | undefined) => (value === undefined ? undefined : parseTokenCount(flag, value));

/**
 * The CI limits from the flags (README "Units"): token counts as `20000`, `20k`, `1.2M`; the chain
 * share as a fraction (`0.8`) or a percentage (`80%`), kept as a percentage like the metric.
 * @throws UsageError for a value that is not in one of those forms
 */
export function parseLimits(options: MetricsOptions): GateLimits {
  const limits: GateLimits = {};
  const set = <K extends keyof GateLimits>(key: K, value: GateLimits[K] | undefined) => {
    if (value !== undefined) limits[key] = value;
  };
  set("maxFrontierGap", tokens("--max-frontier-gap", options.maxFrontierGap));
  if (options.maxChainShare !== undefined) {
    // As a percentage, rounded away from float noise (0.29 × 100 = 28.999999999999996).
    set("maxChainShare", Math.round(parseFraction("--max-chain-share", options.maxChainShare) * 100 * 1e6) / 1e6);
  }
  set("maxOpenThinking", tokens("--max-open-thinking", options.maxOpenThinking));
  set("maxContext", tokens("--max-context", options.maxContext));
  if (options.failOnDiagnostics) limits.failOnDiagnostics = true;
  return limits;
}

/** Sums over the sessions (the chain share is the maximum). */
export function totalsOf(rows: SessionMetrics[], failed: number): MetricsTotals {
  const sum = (f: (r: SessionMetrics) => number) => rows.reduce((n, r) => n + f(r), 0);
  const diagnostics = Object.fromEntries(DIAGNOSTIC_KINDS.map((k) => [k, sum((r) => r.diagnostics[k].count)])) as Record<DiagnosticName, number>;
  return {
    sessions: rows.length,
    failed,
    contextBeforeTokens: sum((r) => r.context.before.tokens),
    contextAfterTokens: sum((r) => r.context.after.tokens),
    contextPiOnlyBeforeTokens: sum((r) => r.context.piOnly.before.tokens),
    contextPiOnlyAfterTokens: sum((r) => r.context.piOnly.after.tokens),
    contextShownBeforeTokens: sum((r) => sentContext(r.context, r.target).before.tokens),
    contextShownAfterTokens: sum((r) => sentContext(r.context, r.target).after.tokens),
    reclaimedTokens: sum((r) => r.context.reclaimedTokens),
    reportedTokens: sum((r) => r.reportedUsage?.tokens ?? 0),
    openCycleThinkingTokens: sum((r) => r.openCycleThinkingTokens),
    frontierGapTokens: sum((r) => r.frontierGapTokens),
    largestChainSharePctMax: rows.reduce((n, r) => Math.max(n, r.largestChainSharePct), 0),
    records: sum((r) => r.index.records),
    summaries: sum((r) => r.index.summaries),
    aliases: sum((r) => r.index.aliases),
    spills: sum((r) => r.index.spills),
    chains: sum((r) => r.index.chains),
    summarizerCalls: sum((r) => r.index.summarizer.calls),
    summarizerInputTokens: sum((r) => r.index.summarizer.inputTokens),
    summarizerOutputTokens: sum((r) => r.index.summarizer.outputTokens),
    summarizerCost: sum((r) => r.index.summarizer.cost),
    diagnosticFaults: sum((r) => r.diagnosticFaults),
    diagnostics,
  };
}

const WIDE: Column[] = [
  { head: "session", fit: true, minWidth: 24 },
  { head: "context ~tokens", align: "right" },
  { head: "reported", align: "right" },
  { head: "open think", align: "right" },
  { head: "chain %", align: "right" },
  { head: "gap", align: "right" },
  { head: "rec/sum/ali/spl/chn", align: "right" },
  { head: "summ. tok", align: "right" },
  { head: "diag", align: "right" },
  { head: "img", align: "right" },
];

const COMPACT: Column[] = [
  { head: "session", fit: true, minWidth: 12 },
  { head: "context ~tokens", align: "right" },
  { head: "gap", align: "right" },
  { head: "chain", align: "right" },
  { head: "diag", align: "right" },
];

/** One row's figures, for a session or the totals. */
interface RowFigures {
  before: number;
  after: number;
  reported: string;
  thinking: number;
  share: string;
  gap: number;
  index: string;
  summarizer: string;
  faults: number;
  images: number;
}

function figuresOf(r: SessionMetrics): RowFigures {
  const s = r.index.summarizer;
  return {
    // The figure of the target `run` would pick: stock Pi's, or the extension's.
    before: sentContext(r.context, r.target).before.tokens,
    after: sentContext(r.context, r.target).after.tokens,
    reported: r.reportedUsage ? fmt(r.reportedUsage.tokens) : "—",
    thinking: r.openCycleThinkingTokens,
    share: `${r.largestChainSharePct}%`,
    gap: r.frontierGapTokens,
    index: [r.index.records, r.index.summaries, r.index.aliases, r.index.spills, r.index.chains].map(fmt).join("/"),
    summarizer: s.calls ? `${fmt(s.inputTokens + s.outputTokens)} ($${s.cost.toFixed(4)})` : "—",
    faults: r.diagnosticFaults,
    images: r.diagnostics.images.count,
  };
}

function totalFigures(t: MetricsTotals): RowFigures {
  return {
    before: t.contextShownBeforeTokens,
    after: t.contextShownAfterTokens,
    reported: fmt(t.reportedTokens),
    thinking: t.openCycleThinkingTokens,
    share: `max ${t.largestChainSharePctMax}%`,
    gap: t.frontierGapTokens,
    index: [t.records, t.summaries, t.aliases, t.spills, t.chains].map(fmt).join("/"),
    summarizer: t.summarizerCalls ? `${fmt(t.summarizerInputTokens + t.summarizerOutputTokens)} ($${t.summarizerCost.toFixed(4)})` : "—",
    faults: t.diagnosticFaults,
    images: t.diagnostics.images,
  };
}

function formatTable(rows: SessionMetrics[], totals: MetricsTotals, out: Output): { text: string; layout: number } {
  const labels = sessionLabels(rows);
  const all = rows.map((r, i) => ({ label: labels[i], f: figuresOf(r) }));
  if (rows.length > 1)
    all.push({ label: out.c.bold(`total (${totals.sessions}${totals.failed ? `, ${totals.failed} failed` : ""})`), f: totalFigures(totals) });
  const faults = (x: number) => (x ? out.c.red(fmt(x)) : "0");
  const change = (f: RowFigures, short: boolean) =>
    `${(short ? shortCount : fmt)(f.before)} → ${(short ? shortCount : fmt)(f.after)} (${percentChange(f.before, f.after)})`;
  const wide = all.map(({ label, f }) => [
    label,
    change(f, false),
    f.reported,
    fmt(f.thinking),
    f.share,
    fmt(f.gap),
    f.index,
    f.summarizer,
    faults(f.faults),
    fmt(f.images),
  ]);
  const compact = all.map(({ label, f }) => [label, change(f, true), shortCount(f.gap), f.share.replace("max ", ""), faults(f.faults)]);
  const tokenizer = rows[0]?.tokenizer === "o200k" ? "o200k tokens" : "~tokens";
  const head = (cols: Column[]) => cols.map((c) => (c.head === "context ~tokens" ? { ...c, head: `context ${tokenizer}` } : c));
  return out.fitted([
    { columns: head(WIDE), rows: wide },
    { columns: head(COMPACT), rows: compact },
  ]);
}

/** The non-zero faults of each session with their first places, or "" when there are none. */
function formatDiagnostics(rows: SessionMetrics[]): string {
  const lines: string[] = [];
  for (const r of rows) {
    const kinds = FAULT_KINDS.filter((k) => r.diagnostics[k].count > 0);
    if (kinds.length === 0) continue;
    lines.push(`${r.session}:`);
    for (const k of kinds) {
      const f = r.diagnostics[k];
      const places = f.places.map((p) => `${p.entryId || "?"}${p.line !== null ? ` (line ${p.line})` : ""} ${p.detail}`);
      lines.push(`  ${k} ${f.count}: ${places.join("; ")}${f.count > f.places.length ? "; …" : ""}`);
    }
  }
  return lines.join("\n");
}
