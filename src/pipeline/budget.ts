/**
 * `budget` for one session (docs/design.md §9, §10): the replay of the pruning triggers over the
 * recorded usage, with Pi's own auto-compaction beside them — Pi's estimate before each request
 * and the turn where Pi would have compacted, under Pi's settings for the session's project.
 */
import { sessionCompactionSettings } from "../compact/settings.js";
import { withPiCompaction, type PiCompactionReport } from "../report/budget-compaction.js";
import { loadModelRegistry, registryWindow, replayBudget } from "../report/budget.js";
import { lineOf } from "../report/session-metrics.js";
import type { SessionView } from "./view.js";

export interface BudgetSessionOptions {
  /** `--context-window`: the window of every turn (tokens), instead of pi-ai's model registry. */
  contextWindow?: number;
  /** `--reserve-tokens`: Pi's `compaction.reserveTokens`, instead of Pi's settings. */
  reserveTokens?: number;
}

/**
 * The budget report of a session under the view's configuration (its `autoBudgetThreshold` and
 * `budgetTurnDelta`).
 * @returns the report, and warnings about Pi's settings files that could not be read
 * @throws UsageError for an invalid compaction setting in Pi's settings
 */
export async function budgetSession(view: SessionView, options: BudgetSessionOptions): Promise<{ report: PiCompactionReport; warnings: string[] }> {
  const { session, config } = view;
  const { contextWindow } = options;
  await loadModelRegistry();
  const budget = replayBudget(view.branch, {
    threshold: config.autoBudgetThreshold,
    delta: config.budgetTurnDelta,
    contextWindow,
    isProtected: view.isProtected,
    lineOf: (e) => lineOf(session, e),
  });
  const pi = sessionCompactionSettings(session, options.reserveTokens !== undefined ? { reserveTokens: options.reserveTokens } : {});
  const windowOf = (provider: string | undefined, model: string | undefined) =>
    contextWindow ?? (provider && model ? (registryWindow(provider, model) ?? null) : null);
  return { report: withPiCompaction(budget, view.branch, pi.settings, windowOf, (e) => lineOf(session, e)), warnings: pi.warnings };
}

/** A warning per model of the report that pi-ai's registry does not know (its turns have no window). */
export function unknownModelWarnings(path: string, report: Pick<PiCompactionReport, "summary">): string[] {
  return report.summary.unknownModels.map((model) => `${path}: model ${model} is not in pi-ai's registry; its turns have no window (pass --context-window N)`);
}
