/**
 * A small terminal chart for `condense budget`: tokens per tool-using turn as vertical bars (eighth
 * blocks), the budget level drawn across, and a marker line under the turns where a trigger fires
 * (`B` budget, `D` delta; a `C` line below marks where Pi itself would have auto-compacted). Turns
 * are bucketed (maximum per bucket) when there are more than `width`; with `maxWidth`, fewer
 * columns are drawn until every line, the axis labels included, fits that many terminal columns.
 */
import type { BudgetRow } from "./budget.js";

const BLOCKS = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

export interface ChartOptions {
  /** Columns for the bars (default 60). */
  width?: number;
  /** Terminal columns every line must fit, labels included (the bars get fewer columns to fit). */
  maxWidth?: number;
  /** Rows for the bars (default 8). */
  height?: number;
  /** Per row: Pi would have auto-compacted at this turn (a `C` on a line of its own under the marks). */
  piMarks?: boolean[];
}

/** Compact token figure: 950, 12k, 1.2M. */
export function shortTokens(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(n >= 10_000_000 ? 0 : 1)}M`;
  if (n >= 1_000) return `${Math.round(n / 1_000)}k`;
  return String(Math.round(n));
}

/**
 * Lines of the chart (no trailing newline; empty when no row has tokens). Pure: no colors. Every
 * character drawn takes one terminal column, so a line's length is its width.
 */
export function budgetChart(rows: BudgetRow[], options: ChartOptions = {}): string[] {
  let width = Math.max(1, options.width ?? 60);
  const height = Math.max(2, options.height ?? 8);
  if (!rows.some((r) => r.tokens !== null)) return [];
  let lines = drawChart(rows, width, height, options.piMarks);
  // Bucketing can change the axis labels, so narrow until it fits (a label is at most a few columns).
  for (let tries = 0; options.maxWidth !== undefined && tries < 4; tries++) {
    const over = Math.max(...lines.map((l) => l.length)) - options.maxWidth;
    const axis = lines[height];
    const bars = axis.length - axis.indexOf("└") - 1;
    if (over <= 0 || bars === 1) break;
    width = Math.max(1, bars - over);
    lines = drawChart(rows, width, height, options.piMarks);
  }
  return lines;
}

function drawChart(rows: BudgetRow[], width: number, height: number, piMarks: boolean[] | undefined): string[] {
  const perColumn = Math.max(1, Math.ceil(rows.length / width));
  const columns: { tokens: number | null; level: number | null; mark: string; pi: boolean }[] = [];
  for (let i = 0; i < rows.length; i += perColumn) {
    const bucket = rows.slice(i, i + perColumn);
    const known = bucket.map((r) => r.tokens).filter((t): t is number => t !== null);
    const levels = bucket.map((r) => r.level).filter((t): t is number => t !== null);
    columns.push({
      tokens: known.length ? Math.max(...known) : null,
      level: levels.length ? Math.min(...levels) : null,
      mark: bucket.some((r) => r.trigger === "budget") ? "B" : bucket.some((r) => r.trigger === "delta") ? "D" : " ",
      pi: !!piMarks?.slice(i, i + perColumn).some(Boolean),
    });
  }
  const top = Math.max(...columns.map((c) => Math.max(c.tokens ?? 0, c.level ?? 0)), 1);
  const levelRowOf = (level: number) => Math.min(height - 1, Math.floor((level / top) * height));
  const labels = new Map<number, string>([
    [height - 1, shortTokens(top)],
    [0, "0"],
  ]);
  const distinctLevels = [...new Set(columns.map((c) => c.level).filter((l): l is number => l !== null))];
  if (distinctLevels.length === 1) labels.set(levelRowOf(distinctLevels[0]), shortTokens(distinctLevels[0]));
  const labelWidth = Math.max(...[...labels.values()].map((l) => l.length));

  const lines: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    let line = "";
    for (const c of columns) {
      const eighths = c.tokens === null ? 0 : Math.round((c.tokens / top) * height * 8);
      const fill = Math.max(0, Math.min(8, eighths - row * 8));
      if (fill === 0 && c.level !== null && levelRowOf(c.level) === row) line += "─";
      else line += BLOCKS[fill];
    }
    const label = labels.get(row) ?? "";
    lines.push(`${label.padStart(labelWidth)} ┤${line}`);
  }
  lines.push(`${" ".repeat(labelWidth)} └${"─".repeat(columns.length)}`);
  if (columns.some((c) => c.mark !== " ")) lines.push(`${" ".repeat(labelWidth)}  ${columns.map((c) => c.mark).join("")}`.trimEnd());
  if (columns.some((c) => c.pi)) lines.push(`${" ".repeat(labelWidth)}  ${columns.map((c) => (c.pi ? "C" : " ")).join("")}`.trimEnd());
  return lines;
}
