/**
 * The per-file work of `condense metrics`, in a module of its own so worker threads can import it
 * without the command line (see batch.ts).
 */
import type { PruneConfig } from "../config/config.js";
import { renderAfterRun } from "../pipeline/render.js";
import { strandedWarnings } from "../pipeline/stranded.js";
import { runFor } from "../pipeline/target.js";
import { sessionView } from "../pipeline/view.js";
import { formatWarning, migrationWarnings, openSession } from "../session/open.js";
import { computeSessionMetrics, type SessionMetrics } from "../report/session-metrics.js";
import { loadTokenizer, type TokenizerName } from "../report/tokenizer.js";

export interface MetricsTaskOptions {
  config: PruneConfig;
  tokenizer: TokenizerName;
}

/**
 * Open one session read-only and compute its metrics — the context after `run` planned in memory
 * with the deterministic summarizer; reader warnings and file problems are returned in `warnings`.
 * @throws UsageError for an unusable file (empty, not JSONL, unreadable)
 */
export async function metricsTask(path: string, options: MetricsTaskOptions): Promise<SessionMetrics> {
  const session = await openSession(path, "read");
  const tokenizer = await loadTokenizer(options.tokenizer);
  const view = sessionView(session, options.config);
  // "After" is after the run `condense run` would make: for the target it would pick (auto).
  const planned = runFor("auto", session.path, session.header?.cwd);
  const afterRun = await renderAfterRun(view.fork(), undefined, planned);
  const metrics = computeSessionMetrics(view, afterRun, tokenizer, planned.target);
  metrics.warnings = [
    ...session.warnings.map(formatWarning),
    ...session.problems.map((p) => `${path}: ${p.message}`),
    ...strandedWarnings(session, view.indexer),
    ...migrationWarnings(session),
  ];
  return metrics;
}

/** URL of this module, for the worker pool. */
export const METRICS_TASK_MODULE = import.meta.url;
