/**
 * The budget dry-run (docs/design.md §9; docs/design.md "Token-budget auto-flush trigger",
 * "Budget-delta flush"): replay the branch's recorded usage turn by turn and show
 * where `autoBudgetThreshold` and `budgetTurnDelta` would have forced a flush.
 *
 * Rules, per tool-using turn (an assistant message with toolCall blocks) whose calls queued a
 * batch (at least one answered, unprotected call — the extension evaluates the gate only then):
 * - `tokens`: the provider-reported usage of that turn's request (`totalTokens`, or input + output
 *   + cacheRead + cacheWrite); when the turn has no usable usage (aborted, error, zero), the last
 *   usable one before it, as Pi's `getContextUsage` does; `null` after a compaction until an
 *   assistant message reports usage again.
 * - `window`: `--context-window`, else the turn's model in pi-ai's registry; unknown → null.
 * - budget fires iff threshold set, tokens non-null, window > 0 and
 *   `tokens ≥ min(MAX_BUDGET_WINDOW, threshold × window)` (never a fraction of a capped window).
 * - `fraction = tokens / min(window, MAX_BUDGET_WINDOW)`, unclamped.
 * - delta fires iff delta set, a previous fraction exists and `fraction − previous ≥ delta`;
 *   the previous fraction is updated on each evaluated turn with a fraction and left unchanged
 *   by a turn without one, so the first evaluated turn can never fire it.
 * - `trigger` is `budget` when the budget fires (whether or not the delta does too), else `delta`,
 *   else `none`.
 * The replay treats the branch as one Pi process (the extension also resets the previous fraction
 * on reload, which the file does not record). Recorded usage is replayed as it was: a flush the
 * dry-run reports does not lower the usage of later turns.
 */
import type { ProtectionTest } from "../prune/protect.js";
import type { AgentMessage, AssistantMessage, SessionEntry, ToolResultMessage } from "../session/types.js";
import { hasValidUsage, peakRequest, reportedRequests, usageTokens, type ReportedRequest } from "../context/usage.js";

/** The extension's ceiling on the budget level and on the delta's denominator (`src/budget.ts`). */
export const MAX_BUDGET_WINDOW = 300_000;

export type BudgetTrigger = "budget" | "delta" | "none";

export interface BudgetRow {
  /** 1-based count of tool-using turns on the branch. */
  turn: number;
  /** 0-based index of the assistant message among all assistant messages of the branch (as `turnIndex` in the index). */
  turnIndex: number;
  entryId: string;
  line: number | null;
  /** `provider/model` of the turn's message, or null when not recorded. */
  model: string | null;
  tokens: number | null;
  /** `turn`: this turn's usage; `earlier`: the last usable usage before it; null: unknown. */
  tokensFrom: "turn" | "earlier" | null;
  window: number | null;
  windowFrom: "registry" | "override" | "unknown";
  /** `min(MAX_BUDGET_WINDOW, threshold × window)`, or null without a threshold or window. */
  level: number | null;
  fraction: number | null;
  /** `fraction − previous fraction`, or null when either is missing. */
  delta: number | null;
  budgetFires: boolean;
  deltaFires: boolean;
  trigger: BudgetTrigger;
  /** False when the turn queued nothing (all calls unanswered or protected): the gate is not evaluated. */
  evaluated: boolean;
  /** Why nothing could fire, when that is not just "below the levels". */
  note?: string;
}

export interface BudgetOptions {
  threshold: number | null;
  delta: number | null;
  /** `--context-window`: overrides the registry for every turn. */
  contextWindow?: number;
  isProtected: ProtectionTest;
  /** Window of a model (default: pi-ai's built-in registry). */
  windowOf?: (provider: string, model: string) => number | undefined;
  /** 1-based line of an entry, for the rows. */
  lineOf?: (entry: SessionEntry) => number | null;
}

export interface BudgetReport {
  threshold: number | null;
  delta: number | null;
  maxBudgetWindow: number;
  rows: BudgetRow[];
  summary: {
    toolTurns: number;
    evaluatedTurns: number;
    flushes: number;
    budgetFlushes: number;
    deltaFlushes: number;
    /** The first turn where a trigger fires. */
    firstFlush: { turn: number; turnIndex: number; entryId: string; line: number | null; trigger: BudgetTrigger } | null;
    /**
     * Highest provider-reported usage of any request on the branch (every assistant message with
     * usage Pi trusts, `context/usage.ts` `reportedRequests`: tool-using or not), never below the last.
     */
    peakTokens: number | null;
    /** The tool-using turn of that request, or null when it called no tool (then see `peakLine`). */
    peakTurn: number | null;
    /** Entry id and 1-based line of the peak request. */
    peakEntryId: string | null;
    peakLine: number | null;
    /** Models the registry does not know (their turns have no window), `provider/model`. */
    unknownModels: string[];
  };
}

type BuiltinLookup = (provider: string, model: string) => { contextWindow?: number } | undefined;
let builtinModel: BuiltinLookup | undefined;

/**
 * Load pi-ai's model catalog (about 150 ms, so only commands that need windows pay for it).
 * Must run before {@link registryWindow}.
 */
export async function loadModelRegistry(): Promise<void> {
  // pi-ai types the lookup by its catalog's literal ids; condense looks up whatever a session names.
  builtinModel ??= (await import("@earendil-works/pi-ai/providers/all")).getBuiltinModel as BuiltinLookup;
}

/**
 * Context window (tokens) of a model in pi-ai's built-in catalog, or undefined when unknown.
 * @throws Error when {@link loadModelRegistry} has not run
 */
export function registryWindow(provider: string, model: string): number | undefined {
  if (!builtinModel) throw new Error("pi-ai's model catalog is not loaded (call loadModelRegistry first)");
  const found = builtinModel(provider, model);
  return typeof found?.contextWindow === "number" && found.contextWindow > 0 ? found.contextWindow : undefined;
}

/** Budget level in tokens: `min(MAX_BUDGET_WINDOW, threshold × window)`. */
export function budgetLevel(threshold: number, window: number): number {
  return Math.min(MAX_BUDGET_WINDOW, threshold * window);
}

/** Usage fraction: `tokens / min(window, MAX_BUDGET_WINDOW)` (unclamped). */
export function usageFraction(tokens: number, window: number): number {
  return tokens / Math.min(window, MAX_BUDGET_WINDOW);
}

/** Tool-call ids answered between the assistant entry at `i` and the next assistant message. */
function answeredAfter(messages: SessionEntry[], i: number): Set<string> {
  const answered = new Set<string>();
  for (let j = i + 1; j < messages.length; j++) {
    const next = messages[j];
    const r = next.type === "message" ? (next.message as AgentMessage | undefined) : undefined;
    if (r?.role === "assistant") break;
    if (r?.role === "toolResult" && typeof (r as ToolResultMessage).toolCallId === "string") answered.add((r as ToolResultMessage).toolCallId);
  }
  return answered;
}

/** The window of a turn's model: `--context-window`, else the registry's, else unknown. */
function windowFor(m: AssistantMessage, options: BudgetOptions, windowOf: NonNullable<BudgetOptions["windowOf"]>): Pick<BudgetRow, "window" | "windowFrom"> {
  if (options.contextWindow !== undefined) return { window: options.contextWindow, windowFrom: "override" };
  const window = m.provider && m.model ? (windowOf(m.provider, m.model) ?? null) : null;
  return { window, windowFrom: window !== null ? "registry" : "unknown" };
}

/** Fill in whether budget and delta fire on an evaluated row; returns the fraction to compare the next turn with. */
function evaluate(row: BudgetRow, previousFraction: number | null, delta: number | null): number | null {
  if (row.tokens === null) row.note = "no usage since the last compaction";
  else if (row.window === null) row.note = row.model ? `unknown model ${row.model}` : "no model recorded";
  row.budgetFires = row.level !== null && row.tokens !== null && row.tokens >= row.level;
  if (row.fraction !== null && previousFraction !== null) {
    row.delta = row.fraction - previousFraction;
    row.deltaFires = delta !== null && row.delta >= delta;
  } else if (row.fraction !== null && previousFraction === null && !row.note) {
    row.note = "first turn with a fraction: the delta cannot fire";
  }
  row.trigger = row.budgetFires ? "budget" : row.deltaFires ? "delta" : "none";
  return row.fraction !== null ? row.fraction : previousFraction;
}

function summaryOf(
  rows: BudgetRow[],
  toolTurns: number,
  unknown: Set<string>,
  peak: ReportedRequest | null,
  lineOf: (entry: SessionEntry) => number | null,
): BudgetReport["summary"] {
  const fired = rows.filter((r) => r.trigger !== "none");
  const first = fired[0];
  return {
    toolTurns,
    evaluatedTurns: rows.filter((r) => r.evaluated).length,
    flushes: fired.length,
    budgetFlushes: fired.filter((r) => r.trigger === "budget").length,
    deltaFlushes: fired.filter((r) => r.trigger === "delta").length,
    firstFlush: first ? { turn: first.turn, turnIndex: first.turnIndex, entryId: first.entryId, line: first.line, trigger: first.trigger } : null,
    peakTokens: peak?.tokens ?? null,
    peakTurn: peak ? (rows.find((r) => r.entryId === peak.entry.id)?.turn ?? null) : null,
    peakEntryId: peak?.entry.id ?? null,
    peakLine: peak ? lineOf(peak.entry) : null,
    unknownModels: [...unknown],
  };
}

/**
 * Replay the budget triggers over a branch (root → leaf, not compaction-aware: every turn that
 * happened, in order).
 */
export function replayBudget(branch: SessionEntry[], options: BudgetOptions): BudgetReport {
  const windowOf = options.windowOf ?? registryWindow;
  const lineOf = options.lineOf ?? (() => null);
  const { threshold, delta } = options;
  const rows: BudgetRow[] = [];
  const unknown = new Set<string>();
  let lastTokens: number | null = null;
  let previousFraction: number | null = null;
  let assistantOrdinal = -1;
  let toolTurns = 0;

  const messages = branch.filter((e) => e.type === "message" || e.type === "compaction");
  for (let i = 0; i < messages.length; i++) {
    const entry = messages[i];
    if (entry.type === "compaction") {
      lastTokens = null;
      continue;
    }
    const m = entry.message as AssistantMessage | undefined;
    if (m?.role !== "assistant") continue;
    assistantOrdinal++;
    const own = hasValidUsage(m) ? usageTokens(m.usage) : null;
    if (own !== null) lastTokens = own;
    const calls = Array.isArray(m.content) ? m.content.filter((b) => b?.type === "toolCall") : [];
    if (calls.length === 0) continue;
    toolTurns++;
    const answered = answeredAfter(messages, i);
    const queued = calls.some((c) => answered.has(c.id) && !options.isProtected(c.name, c.arguments));
    const model = m.provider || m.model ? `${m.provider ?? "?"}/${m.model ?? "?"}` : null;
    const { window, windowFrom } = windowFor(m, options, windowOf);
    if (window === null && model) unknown.add(model);
    const tokens = lastTokens;
    const row: BudgetRow = {
      turn: toolTurns,
      turnIndex: assistantOrdinal,
      entryId: entry.id,
      line: lineOf(entry),
      model,
      tokens,
      tokensFrom: own !== null ? "turn" : tokens !== null ? "earlier" : null,
      window,
      windowFrom,
      level: threshold !== null && window !== null && window > 0 ? budgetLevel(threshold, window) : null,
      fraction: tokens !== null && window !== null && window > 0 ? usageFraction(tokens, window) : null,
      delta: null,
      budgetFires: false,
      deltaFires: false,
      trigger: "none",
      evaluated: queued,
    };
    if (queued) previousFraction = evaluate(row, previousFraction, delta);
    else row.note = "nothing queued (calls unanswered or protected)";
    rows.push(row);
  }
  return {
    threshold,
    delta,
    maxBudgetWindow: MAX_BUDGET_WINDOW,
    rows,
    summary: summaryOf(rows, toolTurns, unknown, peakRequest(reportedRequests(branch)), lineOf),
  };
}
