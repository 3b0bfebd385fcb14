/**
 * The per-file work of `condense report`, in a module of its own so worker threads can import it
 * without the command line (see batch.ts).
 */
import type { PruneConfig } from "../config/config.js";
import { reportSession, type SessionReportOptions } from "../pipeline/session-report.js";
import type { SessionReport } from "../report/session-report.js";
import { openSession } from "../session/open.js";

export interface ReportTaskOptions extends SessionReportOptions {
  config: PruneConfig;
}

/**
 * Open one session read-only and build its report (nothing is written, no model is called).
 * @throws UsageError for an unusable file (empty, not JSONL, unreadable) or invalid Pi settings
 */
export async function reportTask(path: string, options: ReportTaskOptions): Promise<SessionReport> {
  const session = await openSession(path, "read");
  return reportSession(session, options.config, options);
}

/** URL of this module, for the worker pool. */
export const REPORT_TASK_MODULE = import.meta.url;
