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
import { loadConfig } from "../../config/config.js";
import { checkGates, describeCrossing, type GateCrossing, type GateLimits } from "../../report/gates.js";
import { DIAGNOSTIC_KINDS, FAULT_KINDS, type DiagnosticName } from "../../report/diagnostics.js";
import type { SessionMetrics } from "../../report/session-metrics.js";
import { TOKENIZER_NAMES, type TokenizerName } from "../../report/tokenizer.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { UsageError } from "../../util/errors.js";
import { defaultJobs, forEachSession, positiveInt, splitOutcomes } from "../batch.js";
import { METRICS_TASK_MODULE, metricsTask, type MetricsTaskOptions } from "../metrics-task.js";
import { displayNames, Output } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, withConfigOptions } from "../options.js";

/** Version of the `--json` document; bumped only on an incompatible change. */
export const METRICS_SCHEMA = "condense.metrics/1";

interface MetricsOptions extends CommonOptions, ConfigFlags {
  jobs?: string;
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
  /** What stock Pi sends, summed (`context.piOnly.after.tokens`). */
  contextPiOnlyTokens: number;
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
    .description("context metrics and structural diagnostics of sessions; limits turn it into a CI gate (exit 3)")
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .addOption(new Option("--jobs <n>", "sessions processed at once, in worker threads (default: number of cores)"))
    .addOption(
      new Option("--tokenizer <name>", "token estimate: chars4 = round(chars / 4), as the extension; o200k = real tokens")
        .choices(TOKENIZER_NAMES)
        .default("chars4"),
    )
    .option("--max-frontier-gap <tokens>", "fail (exit 3) when unsummarized tool results past the frontier exceed this")
    .option("--max-chain-share <percent>", "fail when the largest chain or open segment exceeds this share of the branch")
    .option("--max-open-thinking <tokens>", "fail when thinking after the last text-only reply exceeds this")
    .option("--max-context <tokens>", "fail when the rendered context after pruning exceeds this")
    .option("--fail-on-diagnostics", "fail on any structural diagnostic (orphan, unanswered call, duplicate or reused id, split, unresolved range)");
  withConfigOptions(cmd).addHelpText(
    "after",
    "\nA limit is crossed when the value is greater than it. Exit codes: 0 ok; 1 a file failed (the others\n" +
      "are still reported); 2 usage error; 3 a limit was crossed (and no file failed).\n" +
      "\nExamples:\n  condense metrics session.jsonl\n  condense metrics ~/.pi/agent/sessions/ --json\n" +
      "  condense metrics sessions/ --max-frontier-gap 20000 --max-chain-share 80 --fail-on-diagnostics",
  );
  withCommonOptions(cmd).action(async (args: string[], options: MetricsOptions) => {
    const out = new Output(options);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const limits = parseLimits(options);
    const config = loadConfig(configSources(options));
    const taskOptions: MetricsTaskOptions = { config, tokenizer: (options.tokenizer ?? "chars4") as TokenizerName };
    const files = await resolveSessionArgs(args);
    const outcomes = await forEachSession(files, jobs, out, "metrics", (path) => metricsTask(path, taskOptions), {
      module: METRICS_TASK_MODULE,
      fn: "metricsTask",
      options: taskOptions,
    });
    const { results: rows, failures } = splitOutcomes(outcomes);
    const crossed: GateCrossing[] = rows.flatMap((r) => checkGates(r, limits));
    if (failures.length > 0) exit.code = files.length === 1 ? failures[0].exitCode : 1;
    else if (crossed.length > 0) exit.code = 3;

    for (const r of rows) for (const w of r.warnings) out.warn(w);
    for (const f of failures) out.error(f.error);
    for (const c of crossed) out.error(`limit crossed: ${describeCrossing(c)}`);
    const totals = totalsOf(rows, failures.length);
    if (options.json) {
      out.printJson({
        schema: METRICS_SCHEMA,
        tokenizer: taskOptions.tokenizer,
        sessions: rows,
        totals,
        failures: failures.map(({ session, error }) => ({ session, error })),
        gates: { limits, crossed },
      });
      return;
    }
    if (rows.length > 0) {
      out.print(formatTable(rows, totals, out));
      out.print(
        out.c.dim(
          "before → after = with the extension switched on · stock Pi = what Pi sends without it · " +
            "reported = provider-reported tokens of the last request · open think = thinking after the last final reply · " +
            "chain % = largest chain's share of the branch · gap = unsummarized tool output past the frontier · " +
            "rec/sum/ali/spl/chn = index records, summaries, dedup aliases, spills, chains",
        ),
      );
    }
    const details = formatDiagnostics(rows);
    if (details) out.print(details);
  });
}

function limitValue(flag: string, value: string | undefined, max?: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0 || (max !== undefined && n > max)) {
    throw new UsageError(`${flag}: expected a number ${max !== undefined ? `from 0 to ${max}` : "≥ 0"}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** The CI limits from the flags. @throws UsageError for a value that is not a number in range */
export function parseLimits(options: MetricsOptions): GateLimits {
  const limits: GateLimits = {};
  const set = <K extends keyof GateLimits>(key: K, value: GateLimits[K] | undefined) => {
    if (value !== undefined) limits[key] = value;
  };
  set("maxFrontierGap", limitValue("--max-frontier-gap", options.maxFrontierGap));
  set("maxChainShare", limitValue("--max-chain-share", options.maxChainShare, 100));
  set("maxOpenThinking", limitValue("--max-open-thinking", options.maxOpenThinking));
  set("maxContext", limitValue("--max-context", options.maxContext));
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
    contextPiOnlyTokens: sum((r) => r.context.piOnly.after.tokens),
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

const fmt = (n: number) => n.toLocaleString("en-US");

function formatTable(rows: SessionMetrics[], totals: MetricsTotals, out: Output): string {
  const names = displayNames(rows.map((r) => r.session));
  const body = rows.map((r, i) => [
    names[i],
    `${fmt(r.context.before.tokens)} → ${fmt(r.context.after.tokens)}${r.context.reclaimedPct ? ` (-${r.context.reclaimedPct}%)` : ""}`,
    `${fmt(r.context.piOnly.after.tokens)}${r.context.piOnly.reclaimedPct ? ` (${-r.context.piOnly.reclaimedPct > 0 ? "+" : ""}${-r.context.piOnly.reclaimedPct}%)` : ""}`,
    r.reportedUsage ? fmt(r.reportedUsage.tokens) : "—",
    fmt(r.openCycleThinkingTokens),
    `${r.largestChainSharePct}%`,
    fmt(r.frontierGapTokens),
    `${r.index.records}/${r.index.summaries}/${r.index.aliases}/${r.index.spills}/${r.index.chains}`,
    r.index.summarizer.calls ? `${fmt(r.index.summarizer.inputTokens + r.index.summarizer.outputTokens)} ($${r.index.summarizer.cost.toFixed(4)})` : "—",
    r.diagnosticFaults ? out.c.red(String(r.diagnosticFaults)) : "0",
    String(r.diagnostics.images.count),
  ]);
  if (rows.length > 1) {
    body.push([
      out.c.bold(`total (${totals.sessions}${totals.failed ? `, ${totals.failed} failed` : ""})`),
      `${fmt(totals.contextBeforeTokens)} → ${fmt(totals.contextAfterTokens)}`,
      fmt(totals.contextPiOnlyTokens),
      fmt(totals.reportedTokens),
      fmt(totals.openCycleThinkingTokens),
      `max ${totals.largestChainSharePctMax}%`,
      fmt(totals.frontierGapTokens),
      `${totals.records}/${totals.summaries}/${totals.aliases}/${totals.spills}/${totals.chains}`,
      totals.summarizerCalls ? `${fmt(totals.summarizerInputTokens + totals.summarizerOutputTokens)} ($${totals.summarizerCost.toFixed(4)})` : "—",
      String(totals.diagnosticFaults),
      String(totals.diagnostics.images),
    ]);
  }
  const tokenizer = rows[0]?.tokenizer === "o200k" ? "o200k tokens" : "~tokens";
  return out.table(
    ["session", `${tokenizer} before → after`, "stock Pi", "reported", "open think", "chain %", "gap", "rec/sum/ali/spl/chn", "summ. tok", "diag", "img"],
    body,
    ["left", "right", "right", "right", "right", "right", "right", "right", "right", "right", "right"],
  );
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
