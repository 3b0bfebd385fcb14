/**
 * `condense budget <session>` (docs/design.md §9): a dry-run of the budget triggers over the
 * session's recorded usage — per tool-using turn the tokens, the window, the fraction, the budget
 * level, the delta and which trigger fires; then a summary and a small chart. Nothing is written.
 */
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { loadConfig, setKey } from "../../config/config.js";
import { contextSize, type ContextSize, sentContext } from "../../context/size.js";
import { runFor } from "../../pipeline/target.js";
import { budgetChart } from "../../report/budget-chart.js";
import { piCompactionOutlook, type PiCompactionReport, type PiCompactionRow } from "../../report/budget-compaction.js";
import { MAX_BUDGET_WINDOW } from "../../report/budget.js";
import { formatLabel, sessionLabel } from "../../session/label.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { UsageError } from "../../util/errors.js";
import { sentLine } from "../format.js";
import { warnIgnoredProjectSettings } from "../extension-status.js";
import { fitLine, Output, wrapWords } from "../output.js";
import { COMPACT_BELOW } from "../table.js";
import { parseFraction, parseTokenCount } from "../units.js";
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

/** `off` (or `none`, `null`) disables; anything else is a fraction, `0.735` or `73.5%` (README "Units"). */
function fractionFlag(flag: string, value: string): number | null {
  const v = value.trim().toLowerCase();
  if (v === "null" || v === "off" || v === "none") return null;
  return parseFraction(flag, value, { above0: true });
}

export function registerBudget(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("budget")
    .description(COMMAND_SUMMARIES.budget.description)
    .argument("[session]", "session file or id (default: latest session of this directory)")
    .option("--threshold <share>", "autoBudgetThreshold: a fraction in (0, 1] or a percentage (0.735, 73.5%), or off (default: the configuration's)")
    .option("--delta <share>", "budgetTurnDelta: a fraction in (0, 1] or a percentage (0.04, 4%), or off (default: the configuration's)")
    .option("--context-window <tokens>", "context window for every turn (200000, 200k, 1M), instead of pi-ai's model registry")
    .option("--reserve-tokens <tokens>", "compaction.reserveTokens for Pi's own auto-compaction (16384, 16k; default: Pi's settings, else 16384)")
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
    if (options.threshold !== undefined) setKey(config, "autoBudgetThreshold", fractionFlag("--threshold", options.threshold), "--threshold");
    if (options.delta !== undefined) setKey(config, "budgetTurnDelta", fractionFlag("--delta", options.delta), "--delta");
    const contextWindow = options.contextWindow === undefined ? undefined : parseTokenCount("--context-window", options.contextWindow, { min: 1 });
    const reserveTokens = tokensFlag("--reserve-tokens", options.reserveTokens);
    const files = await resolveSessionArgs(arg === undefined ? [] : [arg]);
    if (files.length !== 1) throw new UsageError(`budget takes one session; ${arg ?? "the default"} names ${files.length} files`);
    // Loaded when the command runs (pi-ai's model registry is large): start-up stays small.
    const [
      { budgetSession, unknownModelWarnings },
      { renderAfterRun, sentAs, sentMessages },
      { sessionView },
      { formatWarning, migrationWarnings, openSession },
    ] = await Promise.all([
      import("../../pipeline/budget.js"),
      import("../../pipeline/render.js"),
      import("../../pipeline/view.js"),
      import("../../session/open.js"),
    ]);
    const session = await openSession(files[0], "read");
    await warnIgnoredProjectSettings(out, files);
    for (const w of session.warnings) out.warn(formatWarning(w));
    for (const p of session.problems) out.warn(`${session.path}: ${p.message}`);
    const view = sessionView(session, config);
    const { report, warnings } = await budgetSession(view, { contextWindow, reserveTokens });
    for (const w of warnings) out.warn(w);
    for (const w of unknownModelWarnings(session.path, report)) out.warn(w);
    for (const w of migrationWarnings(session)) out.warn(w);
    // The context Pi sends now and after `run` (deterministic summarizer, for the target run would pick: the
    // Pi the user has), with the extension and as stock Pi sends it: the figures run and metrics print.
    const planned = runFor("auto", session.path, session.header?.cwd);
    const afterRun = await renderAfterRun(view.fork(), undefined, planned);
    const sent = (as: "extension" | "pi-only") => ({ before: contextSize(sentMessages(view.rendered, as)), after: contextSize(sentMessages(afterRun, as)) });
    const context = { ...sent("extension"), piOnly: sent("pi-only") };
    const label = sessionLabel(session);
    if (options.json) {
      // `warnings`: every warning the command gave, as `run --json` has them.
      out.printJson({
        schema: BUDGET_SCHEMA,
        session: session.path,
        label,
        contextWindow: contextWindow ?? null,
        target: planned.target,
        context,
        ...report,
        warnings: out.warnings,
      });
      return;
    }
    const head = { label: formatLabel(label), path: session.path };
    out.print(formatBudget(head, { as: sentAs(planned.target), ...sentContext(context, planned.target) }, report, options.chart !== false, out));
  });
}

const fmt = (n: number | null) => (n === null ? "—" : n.toLocaleString("en-US"));
const pct = (f: number | null) => (f === null ? "—" : `${(100 * f).toFixed(1)}%`);
const signedPct = (f: number | null) => (f === null ? "—" : `${f >= 0 ? "+" : ""}${(100 * f).toFixed(1)}`);

/** Columns of the turn table: every one, and the ones kept below {@link COMPACT_BELOW} columns. */
const HEAD = ["turn", "entry", "line", "model", "tokens", "window", "level", "fraction", "Δ pts", "fires", "Pi ~tokens", "Pi"];
const COMPACT = new Set(["turn", "tokens", "window", "fraction", "Δ pts", "fires", "Pi ~tokens", "Pi"]);
/** Columns the compact table gives up, in this order, on a terminal too narrow for it. */
const NARROW_DROPS = ["window", "Δ pts"];
const RIGHT = new Set(["turn", "line", "tokens", "window", "level", "fraction", "Δ pts", "Pi ~tokens"]);
const MODEL = HEAD.indexOf("model");
const MIN_MODEL = 12;

function rowCells(r: PiCompactionRow, compact: boolean): string[] {
  return [
    String(r.turn),
    r.entryId,
    r.line === null ? "—" : String(r.line),
    r.model ?? "—",
    fmt(r.tokens) + (r.tokensFrom === "earlier" ? "*" : ""),
    fmt(r.window) + (r.windowFrom === "override" ? "=" : ""),
    r.level === null ? "—" : fmt(Math.round(r.level)),
    pct(r.fraction),
    signedPct(r.delta),
    r.evaluated ? r.trigger : compact ? "—" : "(not evaluated)",
    fmt(r.piTokens),
    // Pi compacts here: why (before a request over the level, or after an overflow) where there is room; the summary line says it too.
    r.piCompaction ? (compact ? "compacts" : `compacts (${r.piCompaction})`) : "",
  ];
}

const cut = (text: string, width: number) => (text.length > width ? `${text.slice(0, Math.max(1, width - 1))}…` : text);

/**
 * The turn table, two spaces between columns: every column when the terminal is wide enough (the
 * model cut to fit), else the compact set (without the window, then Δ pts, where even that does not fit).
 * @returns the lines, and whether the compact set was used
 */
function formatRows(rows: PiCompactionRow[], out: Output, width: number): { lines: string[]; compact: boolean } {
  const widthsOf = (cells: string[][], keep: number[]) => keep.map((i) => Math.max(HEAD[i].length, ...cells.map((c) => c[i].length)));
  const lineWidth = (ws: number[]) => ws.reduce((t, w) => t + w, 0) + 2 * (ws.length - 1);
  let cells = rows.map((r) => rowCells(r, false));
  let keep = HEAD.map((_, i) => i);
  let widths = widthsOf(cells, keep);
  const room = width - (lineWidth(widths) - widths[MODEL]);
  const compact = width < COMPACT_BELOW || (lineWidth(widths) > width && room < Math.min(MIN_MODEL, widths[MODEL]));
  if (compact) {
    cells = rows.map((r) => rowCells(r, true));
    keep = keep.filter((i) => COMPACT.has(HEAD[i]));
    widths = widthsOf(cells, keep);
    // Narrower still (a 60-column terminal): the window goes, then Δ pts (the fires column names a
    // delta flush); the wide table and --json keep them.
    for (const drop of NARROW_DROPS) {
      if (lineWidth(widths) <= width) break;
      keep = keep.filter((i) => HEAD[i] !== drop);
      widths = widthsOf(cells, keep);
    }
  } else if (lineWidth(widths) > width) widths[keep.indexOf(MODEL)] = room;
  const line = (c: string[]) =>
    keep
      .map((i, k) => {
        const v = cut(c[i], widths[k]);
        return RIGHT.has(HEAD[i]) ? v.padStart(widths[k]) : v.padEnd(widths[k]);
      })
      .join("  ")
      .trimEnd();
  const lines = [out.c.bold(line(HEAD))];
  rows.forEach((r, i) => {
    const text = line(cells[i]);
    lines.push(r.trigger === "budget" || r.piCompaction ? out.c.red(text) : r.trigger === "delta" ? out.c.yellow(text) : text);
  });
  return { lines, compact };
}

/**
 * The human report: who (the label cut to the terminal, the path whole: it may be the only place
 * that names the file condense picked), the context the user's Pi sends before → after `run`,
 * rows, summary, chart.
 */
function formatBudget(
  head: { label: string; path: string },
  context: { as: "extension" | "pi-only"; before: ContextSize; after: ContextSize },
  report: PiCompactionReport,
  chart: boolean,
  out: Output,
): string {
  const { summary } = report;
  const width = out.width;
  const lines: string[] = [
    ...(head.label !== "" ? [fitLine(head.label, width)] : []),
    head.path,
    wrapWords(sentLine(context.as, context), width),
    wrapWords(
      `threshold ${report.threshold ?? "off"}, delta ${report.delta ?? "off"} (of the window, counted up to ${fmt(report.maxBudgetWindow)} tokens)`,
      width,
    ),
    "",
  ];
  const table = report.rows.length === 0 ? null : formatRows(report.rows, out, width);
  if (!table) lines.push("no tool-using turns on the branch");
  else lines.push(...table.lines);
  lines.push("");
  const first = summary.firstFlush;
  // A turn whose window is unknown is evaluated, but neither trigger can fire on it: say how many.
  const blind = report.rows.filter((r) => r.evaluated && r.window === null).length;
  const blindNote = blind > 0 ? ` (${fmt(blind)} with the window unknown: no trigger can fire there)` : "";
  // Findings stay one line each (the terminal wraps them; grep finds them).
  lines.push(
    `${summary.flushes} flush${summary.flushes === 1 ? "" : "es"} (${summary.budgetFlushes} budget, ${summary.deltaFlushes} delta) over ` +
      `${summary.evaluatedTurns} evaluated of ${summary.toolTurns} tool-using turns${blindNote}; ` +
      `first flush: ${first ? `turn ${first.turn} (${first.trigger}, entry ${first.entryId}${first.line !== null ? `, line ${first.line}` : ""})` : "none"}; ` +
      `peak tokens: ${summary.peakTokens === null ? "unknown" : `${fmt(summary.peakTokens)} at ${peakPlace(summary)}`}`,
  );
  lines.push(piCompactionLine(report));
  if (summary.unknownModels.length > 0) lines.push(`unknown models (no window): ${summary.unknownModels.join(", ")}`);
  if (table?.compact && report.rows.some((r) => !r.evaluated)) lines.push("fires — = not evaluated (the turn queued no batch)");
  if (report.rows.some((r) => r.tokensFrom === "earlier")) lines.push("* tokens of an earlier turn (this turn reported no usable usage)");
  if (report.rows.some((r) => r.windowFrom === "override")) lines.push("= window from --context-window");
  if (chart) lines.push(...chartLines(report, width));
  return lines.join("\n");
}

/**
 * The chart of tokens per turn: at most 80 bars, and every line — axis labels included — within
 * `width` terminal columns (no limit when output is piped without COLUMNS: nothing is cut).
 */
function chartLines(report: PiCompactionReport, width: number): string[] {
  const maxWidth = Number.isFinite(width) ? width : undefined;
  const plot = budgetChart(report.rows, { width: 80, maxWidth, piMarks: report.rows.map((r) => r.piCompaction !== null) });
  if (plot.length === 0) return [];
  const axis = plot.find((l) => l.includes("└")) ?? "";
  const bars = axis.length - axis.indexOf("└") - 1;
  const per = report.rows.length > bars ? `, ${Math.ceil(report.rows.length / bars)} turns per column` : "";
  return ["", wrapWords(`tokens per tool-using turn (─ budget level${per})`, width), wrapWords("B budget, D delta, C Pi compacts", width), ...plot];
}

/** Where Pi itself would have auto-compacted, in one line ("?" where windows are unknown, as `compact --if-over` says). */
function piCompactionLine(report: PiCompactionReport): string {
  const c = report.compaction;
  const points = report.summary.piCompactions;
  const outlook = piCompactionOutlook(report);
  if (outlook.state === "off") return "Pi's auto-compaction is off (compaction.enabled: false)";
  const head = `Pi would auto-compact (reserveTokens ${fmt(c.reserveTokens)}): `;
  const models = report.summary.unknownModels.length > 0 ? `${report.summary.unknownModels.join(", ")}; ` : "";
  const why = `(${models}pass --context-window N)`;
  if (outlook.state === "never") return `${head}never`;
  if (outlook.state === "unknown") {
    return outlook.unknownTurns === outlook.turns
      ? `${head}? — window unknown ${why}`
      : `${head}not on the ${outlook.turns - outlook.unknownTurns} turns whose window is known; ? on the ${outlook.unknownTurns} whose window is unknown ${why}`;
  }
  const where = points.map((p) => {
    const entry = `entry ${p.entryId}${p.line !== null ? `, line ${p.line}` : ""}`;
    const at =
      p.turnIs === "request"
        ? `turn ${p.turn}, ${entry}`
        : `${entry}, a request without tool calls${p.turnIs === "next" ? `; marked at turn ${p.turn}, the first it shrinks` : ""}`;
    const over = `(~${fmt(p.tokens)} > ${fmt(p.level)} = ${fmt(p.contextWindow)} − ${fmt(c.reserveTokens)})`;
    if (p.reason === "overflow") return `after the request that overflowed (${at})`;
    if (p.check === "after-reply")
      return `after the final reply, before the next prompt (${p.turnIs === "request" ? `turn ${p.turn}, ${entry}` : entry}) ${over}`;
    return `before the request of ${at} ${over}`;
  });
  const partly = outlook.unknownTurns > 0 ? `; ? on the ${outlook.unknownTurns} turns whose window is unknown ${why}` : "";
  return `${head}${where.join("; ")}${partly}`;
}

/** Where the peak request is: its tool-using turn, or (a reply that called no tool) its entry and line. */
function peakPlace(summary: { peakTurn: number | null; peakEntryId: string | null; peakLine: number | null }): string {
  if (summary.peakTurn !== null) return `turn ${summary.peakTurn}`;
  return `entry ${summary.peakEntryId}${summary.peakLine !== null ? `, line ${summary.peakLine}` : ""} (a reply without tool calls)`;
}
