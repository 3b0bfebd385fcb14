/**
 * Pi's own auto-compaction next to the pruning triggers in `condense budget` (issue 14): per
 * tool-using turn, Pi's estimate of the context before that turn's request, and the turn at which
 * Pi would have compacted (compact/trigger.ts: `window − reserveTokens`, or an overflow error);
 * also Pi's estimate from the messages alone through that turn, to set beside the reported usage.
 */
import { contextBeforeRequests, estimatesThroughRequests, piCompactionPoints, type PiCompactionPoint } from "../compact/trigger.js";
import type { CompactionSettings } from "../compact/settings.js";
import type { SessionEntry } from "../session/types.js";
import type { BudgetReport, BudgetRow } from "./budget.js";

export interface PiCompactionRow extends BudgetRow {
  /** Pi's estimate of the context before this turn's request (tokens). */
  piTokens: number | null;
  /**
   * Pi's per-message estimate of its projection through this turn's assistant message, no usage
   * trusted (tokens): the same span as `tokens` (the request's input and output), from the messages alone.
   */
  estimateTokens: number | null;
  /**
   * Set on the turn where Pi would have compacted: before its request (`threshold`) or after it
   * failed (`overflow`); when that request called no tool (an aborted or failed request, a text
   * reply), on the first tool-using turn after it — the first this compaction shrinks.
   */
  piCompaction: "threshold" | "overflow" | null;
}

export interface PiCompactionReport extends Omit<BudgetReport, "rows" | "summary"> {
  compaction: CompactionSettings;
  rows: PiCompactionRow[];
  summary: BudgetReport["summary"] & {
    /** Every place Pi would have auto-compacted (the first, and the first after each recorded compaction). */
    piCompactions: PiCompactionPlace[];
  };
}

/**
 * One place Pi would auto-compact, located once for `budget`, `report` and the page (issue 14).
 * `turn` is the tool-using turn marked in the table and the charts: the request's own turn
 * (`turnIs: "request"`), or, when the request called no tool, the first tool-using turn after it
 * (`"next"`); null (`"none"`) when no tool-using turn follows. `line` is the request's own line.
 */
export type PiCompactionPlace = Omit<PiCompactionPoint, "index"> & { turn: number | null; turnIs: "request" | "next" | "none"; line: number | null };

/** The turn of a place as a short label, `turn 12`, or `line 446` when no tool-using turn follows it. */
export function piCompactionLabel(p: Pick<PiCompactionPlace, "turn" | "line">): string {
  return p.turn !== null ? `turn ${p.turn}` : `line ${p.line ?? "—"}`;
}

/**
 * Add Pi's auto-compaction to a budget replay of `branch`.
 * @param windowOf the context window the budget rows use (override or registry), by provider and model
 * @param lineOf 1-based line of an entry
 */
export function withPiCompaction(
  report: BudgetReport,
  branch: SessionEntry[],
  settings: CompactionSettings,
  windowOf: (provider: string | undefined, model: string | undefined) => number | null,
  lineOf: (entry: SessionEntry) => number | null,
): PiCompactionReport {
  const estimates = contextBeforeRequests(branch);
  const points = piCompactionPoints(branch, settings, windowOf, estimates);
  const tokensOf = new Map(estimates.map((e) => [e.entryId, e.tokens]));
  const estimateOf = new Map(estimatesThroughRequests(branch).map((e) => [e.entryId, e.tokens]));
  // Each point's row: its own request's, or the first tool-using turn after it (rows are in branch
  // order) — but not one past the next recorded compaction: there Pi had compacted already.
  const position = new Map(branch.map((e, i) => [e.id, i]));
  const compactions = branch.flatMap((e, i) => (e.type === "compaction" ? [i] : []));
  const rowAt = points.map((p) => {
    const end = compactions.find((c) => c > p.index) ?? branch.length;
    const i = report.rows.findIndex((r) => (position.get(r.entryId) ?? -1) >= p.index);
    return i < 0 || (position.get(report.rows[i].entryId) ?? branch.length) > end ? null : { i, own: report.rows[i].entryId === p.entryId };
  });
  const pointOf = new Map(points.flatMap((p, k) => (rowAt[k] ? [[report.rows[rowAt[k].i].entryId, p] as const] : [])));
  return {
    ...report,
    compaction: settings,
    rows: report.rows.map((r) => ({
      ...r,
      piTokens: tokensOf.get(r.entryId) ?? null,
      estimateTokens: estimateOf.get(r.entryId) ?? null,
      piCompaction: pointOf.get(r.entryId)?.reason ?? null,
    })),
    summary: {
      ...report.summary,
      piCompactions: points.map(({ index, ...p }, k) => {
        const at = rowAt[k];
        return { ...p, turn: at ? report.rows[at.i].turn : null, turnIs: at ? (at.own ? "request" : "next") : "none", line: lineOf(branch[index]) };
      }),
    },
  };
}

/**
 * What can be said of Pi's auto-compaction over a replay: `off` (compaction.enabled false), `at`
 * the places found, `never` (every turn's window is known and none crosses), or `unknown` (none
 * found, but some turns have no window: there Pi may have compacted — as `compact --if-over`
 * says "window unknown").
 * @returns the state, and how many of the tool-using turns have no window
 */
export function piCompactionOutlook(report: PiCompactionReport): { state: "off" | "at" | "never" | "unknown"; unknownTurns: number; turns: number } {
  const unknownTurns = report.rows.filter((r) => r.window === null).length;
  const turns = report.rows.length;
  if (!report.compaction.enabled) return { state: "off", unknownTurns, turns };
  if (report.summary.piCompactions.length > 0) return { state: "at", unknownTurns, turns };
  return { state: unknownTurns > 0 ? "unknown" : "never", unknownTurns, turns };
}
