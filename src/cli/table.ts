/**
 * Tables that fit the terminal (docs/design.md §2). A command describes one or more layouts — a
 * wide one with every column, a compact one for narrow terminals (below {@link COMPACT_BELOW}
 * columns, as ccusage does) — each with one column (the session label) that is cut to make the
 * table fit. The first layout that fits with that column at its minimum width is printed.
 */
import Table from "cli-table3";
import stringWidth from "string-width";

/** Below this many columns the compact layout is used. */
export const COMPACT_BELOW = 100;
/** Width when neither a terminal nor `COLUMNS` says (output piped to a file or a program): no limit, nothing cut. */
export const DEFAULT_WIDTH = Number.POSITIVE_INFINITY;

export interface Column {
  head: string;
  align?: "left" | "right";
  /** The column cut (with `…`) so that the table fits; at most one per layout. */
  fit?: boolean;
  /** Narrowest the fitted column may get (content characters; default 16). */
  minWidth?: number;
}

export interface TableLayout {
  columns: Column[];
  /** Cells as printed (may hold colour codes; widths ignore them). */
  rows: string[][];
}

/**
 * The width to fit: the terminal's columns when stdout is one, else `COLUMNS` when it is a
 * positive integer, else {@link DEFAULT_WIDTH} (no limit).
 */
export function outputWidth(stream: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv = process.env): number {
  if (stream.isTTY && stream.columns && stream.columns > 0) return stream.columns;
  const fromEnv = Number(env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return DEFAULT_WIDTH;
}

/** Columns of a cli-table3 table whose columns are `widths` wide (content + 1 space each side). */
const tableWidth = (widths: number[]) => widths.reduce((n, w) => n + w + 2, 0) + widths.length + 1;

/**
 * The content width of each column for `width` terminal columns, the fitted column taking what is
 * left (never more than its content needs); null when even its minimum does not fit.
 */
function columnWidths(layout: TableLayout, width: number): number[] | null {
  const natural = layout.columns.map((c, i) => Math.max(stringWidth(c.head), ...layout.rows.map((r) => stringWidth(r[i] ?? ""))));
  const fit = layout.columns.findIndex((c) => c.fit);
  if (tableWidth(natural) <= width) return natural;
  if (fit < 0) return null;
  const others = tableWidth(natural) - natural[fit];
  const room = width - others;
  const min = Math.min(natural[fit], layout.columns[fit].minWidth ?? 16);
  if (room < min) return null;
  return natural.map((w, i) => (i === fit ? room : w));
}

/**
 * Print the first layout that fits `width` (skipping all but the last when `width` is below
 * {@link COMPACT_BELOW}); the last one is printed in any case, cut as far as it goes.
 * @param bold styles a header cell (e.g. chalk's bold on a terminal)
 * @returns the table and the index of the layout printed
 */
export function fittedTable(layouts: TableLayout[], width: number, bold: (s: string) => string = (s) => s): { text: string; layout: number } {
  const candidates = width < COMPACT_BELOW ? layouts.slice(-1) : layouts;
  let chosen = candidates[candidates.length - 1];
  let widths: number[] | null = null;
  for (const layout of candidates) {
    widths = columnWidths(layout, width);
    if (widths) {
      chosen = layout;
      break;
    }
  }
  if (!widths) {
    const fit = chosen.columns.findIndex((c) => c.fit);
    widths = chosen.columns.map((c, i) => Math.max(stringWidth(c.head), ...chosen.rows.map((r) => stringWidth(r[i] ?? ""))));
    if (fit >= 0) widths[fit] = Math.max(4, width - (tableWidth(widths) - widths[fit]));
  }
  const table = new Table({
    head: chosen.columns.map((c) => bold(c.head)),
    style: { head: [], border: [], compact: true },
    colAligns: chosen.columns.map((c) => c.align ?? "left"),
    colWidths: widths.map((w) => w + 2),
    wordWrap: false,
  });
  for (const row of chosen.rows) table.push(row);
  return { text: table.toString(), layout: layouts.indexOf(chosen) };
}
