/**
 * `condense budget <session>` (docs/design.md §9): a dry-run of the budget triggers over the
 * session's recorded usage — per tool-using turn the tokens, the window, the fraction, the budget
 * level, the delta and which trigger fires; then a summary and a small chart. Nothing is written.
 */
import { Option, type Command } from "commander";
import { loadConfig, setKey } from "../../config/config.js";
import { budgetSession } from "../../pipeline/budget.js";
import { sessionView } from "../../pipeline/view.js";
import { budgetChart } from "../../report/budget-chart.js";
import type { PiCompactionReport, PiCompactionRow } from "../../report/budget-compaction.js";
import { MAX_BUDGET_WINDOW } from "../../report/budget.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { formatWarning, openSession } from "../../session/open.js";
import { UsageError } from "../../util/errors.js";
import { Output } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, tokensFlag, withConfigOptions } from "../options.js";

/** Version of the `--json` document. */
export const BUDGET_SCHEMA = "condense.budget/1";

interface BudgetOptions extends CommonOptions, ConfigFlags {
  threshold?: string;
  delta?: string;
  contextWindow?: string;
  reserveTokens?: string;
  chart?: boolean;
}

/** `null`/`off` disable; anything else must be a JSON number (validated by the configuration). */
function fractionFlag(value: string): unknown {
  const v = value.trim().toLowerCase();
  if (v === "null" || v === "off" || v === "none") return null;
  const n = Number(value);
  return value.trim() !== "" && Number.isFinite(n) ? n : value;
}

export function registerBudget(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("budget")
    .description("dry-run of the budget triggers (autoBudgetThreshold, budgetTurnDelta) over the session's recorded usage")
    .argument("[session]", "session file or id (default: latest session of this directory)")
    .option("--threshold <fraction>", "autoBudgetThreshold: (0, 1], or off (default: the configuration's, 0.735)")
    .option("--delta <fraction>", "budgetTurnDelta: (0, 1], or off (default: the configuration's, 0.04)")
    .option("--context-window <tokens>", "context window for every turn, instead of pi-ai's model registry")
    .option("--reserve-tokens <n>", "compaction.reserveTokens for Pi's own auto-compaction (default: Pi's settings, else 16384)")
    .addOption(new Option("--no-chart", "leave out the chart"));
  withConfigOptions(cmd).addHelpText(
    "after",
    `\nBudget fires when tokens ≥ min(${MAX_BUDGET_WINDOW}, threshold × window); delta fires when tokens / min(window, ${MAX_BUDGET_WINDOW})\n` +
      "grew by at least delta since the previous evaluated turn (never on the first).\n" +
      'Pi compacts on its own when its estimate of the context exceeds window − reserveTokens (column "Pi", mark C).\n' +
      "\nExamples:\n  condense budget session.jsonl\n  condense budget session.jsonl --threshold 0.5 --delta off --json",
  );
  withCommonOptions(cmd).action(async (arg: string | undefined, options: BudgetOptions) => {
    const out = new Output(options);
    const config = loadConfig(configSources(options));
    if (options.threshold !== undefined) setKey(config, "autoBudgetThreshold", fractionFlag(options.threshold), "--threshold");
    if (options.delta !== undefined) setKey(config, "budgetTurnDelta", fractionFlag(options.delta), "--delta");
    let contextWindow: number | undefined;
    if (options.contextWindow !== undefined) {
      contextWindow = Number(options.contextWindow);
      if (!Number.isInteger(contextWindow) || contextWindow < 1) {
        throw new UsageError(`--context-window: expected a positive integer (tokens), got ${JSON.stringify(options.contextWindow)}`);
      }
    }
    const reserveTokens = tokensFlag("--reserve-tokens", options.reserveTokens);
    const files = await resolveSessionArgs(arg === undefined ? [] : [arg]);
    if (files.length !== 1) throw new UsageError(`budget takes one session; ${files.length} were given`);
    const session = await openSession(files[0], "read");
    for (const w of session.warnings) out.warn(formatWarning(w));
    for (const p of session.problems) out.warn(`${session.path}: ${p.message}`);
    const { report, warnings } = await budgetSession(sessionView(session, config), { contextWindow, reserveTokens });
    for (const w of warnings) out.warn(w);
    for (const model of report.summary.unknownModels) {
      out.warn(`${session.path}: model ${model} is not in pi-ai's registry; its turns have no window (pass --context-window N)`);
    }
    if (options.json) {
      out.printJson({ schema: BUDGET_SCHEMA, session: session.path, contextWindow: contextWindow ?? null, ...report });
      return;
    }
    out.print(formatBudget(session.path, report, options.chart !== false, out));
  });
}

const fmt = (n: number | null) => (n === null ? "—" : n.toLocaleString("en-US"));
const pct = (f: number | null) => (f === null ? "—" : `${(100 * f).toFixed(1)}%`);
const signedPct = (f: number | null) => (f === null ? "—" : `${f >= 0 ? "+" : ""}${(100 * f).toFixed(1)}`);

function formatRows(rows: PiCompactionRow[], out: Output): string[] {
  const head = ["turn", "entry", "line", "model", "tokens", "window", "level", "fraction", "Δ pts", "fires", "Pi ~tokens", "Pi"];
  const cells = rows.map((r) => [
    String(r.turn),
    r.entryId,
    r.line === null ? "—" : String(r.line),
    r.model ?? "—",
    fmt(r.tokens) + (r.tokensFrom === "earlier" ? "*" : ""),
    fmt(r.window) + (r.windowFrom === "override" ? "=" : ""),
    r.level === null ? "—" : fmt(Math.round(r.level)),
    pct(r.fraction),
    signedPct(r.delta),
    r.evaluated ? r.trigger : "(not evaluated)",
    fmt(r.piTokens),
    r.piCompaction ? `compacts (${r.piCompaction})` : "",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const right = new Set([0, 2, 4, 5, 6, 7, 8, 10]);
  const line = (c: string[]) =>
    c
      .map((v, i) => (right.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join("  ")
      .trimEnd();
  const lines = [out.c.bold(line(head))];
  rows.forEach((r, i) => {
    const text = line(cells[i]);
    lines.push(r.trigger === "budget" || r.piCompaction ? out.c.red(text) : r.trigger === "delta" ? out.c.yellow(text) : text);
  });
  return lines;
}

/** The human report: rows, summary, chart. */
function formatBudget(path: string, report: PiCompactionReport, chart: boolean, out: Output): string {
  const { summary } = report;
  const lines: string[] = [
    `${path}`,
    `threshold ${report.threshold ?? "off"}, delta ${report.delta ?? "off"}, MAX_BUDGET_WINDOW ${fmt(report.maxBudgetWindow)}`,
    "",
  ];
  if (report.rows.length === 0) lines.push("no tool-using turns on the branch");
  else lines.push(...formatRows(report.rows, out));
  lines.push("");
  const first = summary.firstFlush;
  lines.push(
    `${summary.flushes} flush${summary.flushes === 1 ? "" : "es"} (${summary.budgetFlushes} budget, ${summary.deltaFlushes} delta) over ` +
      `${summary.evaluatedTurns} evaluated of ${summary.toolTurns} tool-using turns; ` +
      `first flush: ${first ? `turn ${first.turn} (${first.trigger}, entry ${first.entryId}${first.line !== null ? `, line ${first.line}` : ""})` : "none"}; ` +
      `peak tokens: ${summary.peakTokens === null ? "unknown" : `${fmt(summary.peakTokens)} at turn ${summary.peakTurn}`}`,
  );
  lines.push(piCompactionLine(report));
  if (summary.unknownModels.length > 0) lines.push(`unknown models (no window): ${summary.unknownModels.join(", ")}`);
  if (report.rows.some((r) => r.tokensFrom === "earlier")) lines.push("* tokens of an earlier turn (this turn reported no usable usage)");
  if (report.rows.some((r) => r.windowFrom === "override")) lines.push("= window from --context-window");
  if (chart) {
    const width = Math.max(20, Math.min(80, ((out.stdout as { columns?: number }).columns ?? 80) - 10));
    const plot = budgetChart(report.rows, { width, piMarks: report.rows.map((r) => r.piCompaction !== null) });
    if (plot.length > 0) {
      lines.push(
        "",
        `tokens per tool-using turn (─ budget level${report.rows.length > width ? `, ${Math.ceil(report.rows.length / width)} turns per column` : ""}; B budget, D delta, C Pi compacts)`,
      );
      lines.push(...plot);
    }
  }
  return lines.join("\n");
}

/** Where Pi itself would have auto-compacted, in one line. */
function piCompactionLine(report: PiCompactionReport): string {
  const c = report.compaction;
  const points = report.summary.piCompactions;
  if (!c.enabled) return "Pi's auto-compaction is off (compaction.enabled: false)";
  if (points.length === 0) return `Pi would auto-compact (reserveTokens ${fmt(c.reserveTokens)}): never`;
  const where = points.map((p) => {
    const at = `${p.turn !== null ? `turn ${p.turn}, ` : ""}entry ${p.entryId}${p.line !== null ? `, line ${p.line}` : ""}`;
    return p.reason === "overflow"
      ? `after the request that overflowed (${at})`
      : `before the request of ${at} (~${fmt(p.tokens)} > ${fmt(p.level)} = ${fmt(p.contextWindow)} − ${fmt(c.reserveTokens)})`;
  });
  return `Pi would auto-compact (reserveTokens ${fmt(c.reserveTokens)}): ${where.join("; ")}`;
}
