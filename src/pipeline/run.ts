/**
 * `run` for one session (docs/design.md §2, §5, §6): open it for writing, refuse what must not be
 * written, migrate a v1/v2 file when asked, stop early when there is nothing to do, plan in memory,
 * then commit — unless it is a dry run. What the user sees (warnings, notices, progress) goes
 * through {@link RunHooks}; the command only parses options and prints the report.
 */
import { dirname } from "node:path";
import type { PruneConfig } from "../config/config.js";
import type { FlushProgress } from "../prune/flush.js";
import { commitRun, openForWrite, refuseIfOpenNow, type WriteOptions } from "../session/commit.js";
import { sessionLabel, type SessionLabel } from "../session/label.js";
import type { Session } from "../session/session.js";
import { appendedBytes } from "../session/writer.js";
import { emptyEstimate, type Estimate } from "../summarize/estimate.js";
import { reusingSummarizer } from "../summarize/reuse.js";
import { createEstimator, createSummarizer } from "../summarize/select.js";
import type { Summarizer } from "../summarize/types.js";
import type { SummarizerChoice } from "../summarize/types.js";
import { nowMs } from "../util/clock.js";
import { CondenseError } from "../util/errors.js";
import { idleReport } from "./pending.js";
import { planRun, type RunPlan } from "./plan.js";
import type { RunReport } from "./report.js";
import { runFor, type TargetChoice } from "./target.js";
import { describeStranded, type StrandedWrite, storedAnswers, strandedWrites } from "./stranded.js";
import { sessionView } from "./view.js";

export interface RunSessionOptions extends WriteOptions {
  config: PruneConfig;
  /** Whom to write for: the extension only, stock Pi too (native context edits), or `auto` (pipeline/target.ts). */
  target: TargetChoice;
  summarizer: SummarizerChoice;
  /** Parallel summarizer calls. */
  concurrency: number;
  /** Ctrl-C: in-flight summarizer calls abort and nothing is written (exit 130). */
  signal: AbortSignal;
  /** `--estimate`: plan without calling any model, count what the model would be sent; nothing written. */
  estimate?: boolean;
}

/** A stranded write as `--json` shows it. */
export interface StrandedJson {
  entries: number;
  firstLine: number | null;
  lastLine: number | null;
  writtenAt: string;
  displacedBy: StrandedWrite["displacedBy"];
}

/** Where `run` reports to while it works. */
export interface RunHooks {
  /** A reader warning about the session (a skipped line, …). */
  warn(message: string): void;
  /** A one-line notice from the summarizer (fallback entered or left), prefixed with the session's path. */
  notice(message: string): void;
  /** Called when summarizing starts; returns where progress goes, or nothing. */
  progress?(summarizerName: string, local: boolean): { update(p: FlushProgress): void; stop(): void } | null;
}

/**
 * What a run adds on disk: the session grows by `appendBytes` (what was appended, or would be on a
 * dry run) from `fileBytes`; sidecars (spilled outputs) go to `sidecarDirs`.
 */
export interface DiskGrowth {
  fileBytes: number;
  appendBytes: number;
  sidecarFiles: number;
  sidecarBytes: number;
  /** Folders the sidecars go to (`<session id>-blobs/` beside the session), each once. */
  sidecarDirs: string[];
}

/** What `run` reports per session (README "JSON output"). */
export interface RunFileResult extends RunReport {
  /** How a person knows the session: short id, date, name or first prompt. */
  label: SessionLabel;
  dryRun: boolean;
  written: string | null;
  bytesAppended: number;
  disk: DiskGrowth;
  /** Warnings about this session (reader warnings, summarizer notices), as printed on stderr. */
  warnings: string[];
  migratedFrom?: number;
  backup?: string;
  /** Dry runs: why the real run would refuse to write this session (it looks live; Pi or another process has it open). */
  wouldRefuse?: string;
  /** Writes of an earlier run that a later Pi write left off the active branch (applied again by this run). */
  stranded?: StrandedJson[];
  /** With `--estimate`: what the model-backed run would send and cost. */
  estimate?: Estimate;
  wallMs: number;
}

/**
 * The summarizer of this run — the estimating one for `--estimate` — answering first from the
 * summaries the stranded writes hold (reuse.ts), so the model is not asked for them again.
 */
async function summarizerFor(
  session: Session,
  options: RunSessionOptions,
  hooks: RunHooks,
  stranded: StrandedWrite[],
  warnings: string[],
): Promise<{ summarizer: Summarizer; estimator: { estimate: Estimate } | null }> {
  const estimator = options.estimate ? await createEstimator(options.summarizer, options.config, session) : null;
  const onNotice = (m: string) => {
    warnings.push(`${session.path}: ${m}`);
    hooks.notice(`${session.path}: ${m}`);
  };
  const chosen = estimator?.summarizer ?? (await createSummarizer(options.summarizer, options.config, session, { onNotice }));
  const summarizer = stranded.length > 0 ? reusingSummarizer(chosen, storedAnswers(session, stranded)) : chosen;
  return { summarizer, estimator };
}

/** A stranded write in `--json`: how many entries, where, when, and what took their place. */
function strandedJson(w: StrandedWrite): StrandedJson {
  return { entries: w.entries.length, firstLine: w.firstLine, lastLine: w.lastLine, writtenAt: w.writtenAt, displacedBy: w.displacedBy };
}

/**
 * Run the main job on one session file.
 * @throws UsageError (exit 2) for a file that cannot be written (v1/v2 without --migrate, existing
 *   --output or backup, unusable input); CondenseError (exit 1) for a live session or a failed
 *   write; CondenseError (exit 130) when interrupted — nothing was written then
 */
export async function runSession(file: string, options: RunSessionOptions, hooks: RunHooks): Promise<RunFileResult> {
  const started = Date.now();
  let path = file;
  const interrupted = () => new CondenseError(`${path}: interrupted; nothing was written`, 130);
  if (options.signal.aborted) throw interrupted();
  // Every warning also goes into the report (`run --json`).
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    hooks.warn(message);
  };
  // Context edits name their targets by id, which Pi's own v1 migration would renumber.
  // Refused for being open elsewhere only when there is something to write (deferred).
  const opened = await openForWrite(file, { ...options, idsNamed: options.target !== "extension", deferOpenRefusal: true }, warn);
  const { session, migration, base, deferred } = opened;
  path = session.path;
  const label = sessionLabel(session);
  const targetPath = options.output ?? session.path;
  const { target, recovery } = runFor(options.target, targetPath, session.header?.cwd, session.path);
  const view = sessionView(session, options.config);
  // Entries of an earlier run that a later Pi write left off the branch: said, and applied again.
  const stranded = strandedWrites(session, view.indexer);
  for (const w of stranded) warn(describeStranded(session, w, options.dryRun ? "dry-run" : "run"));
  const done = (report: RunReport, written: string | null, bytesAppended: number, plan?: RunPlan): RunFileResult => ({
    ...report,
    label,
    dryRun: options.dryRun,
    written,
    bytesAppended,
    disk: diskGrowth(session, plan, written === null ? undefined : bytesAppended),
    warnings,
    ...migration,
    ...(refusal ? { wouldRefuse: refusal } : {}),
    ...(stranded.length > 0 ? { stranded: stranded.map(strandedJson) } : {}),
    wallMs: Date.now() - started,
  });
  // Already condensed (nothing to capture, compress or record): no summarizer, no plan, nothing written.
  const idle = options.output ? null : idleReport(view, { target, recovery });
  // A real run of an idle session is not refused for being open elsewhere: nor is its dry run.
  const refusal = opened.refusal ?? (idle ? undefined : deferred);
  if (idle) return options.estimate ? { ...done(idle, null, 0), dryRun: true, estimate: emptyEstimate(null) } : done(idle, null, 0);
  if (deferred && !options.dryRun) throw new CondenseError(deferred, 1);
  const { summarizer, estimator } = await summarizerFor(session, options, hooks, stranded, warnings);
  const progress = estimator ? null : (hooks.progress?.(summarizer.name, summarizer.local) ?? null);
  let plan: RunPlan;
  try {
    plan = await planRun(view, {
      summarizer,
      concurrency: options.concurrency,
      nowMs: nowMs(),
      targetPath,
      target,
      recovery,
      signal: options.signal,
      onProgress: progress ? (p) => progress.update(p) : undefined,
    });
  } catch (error) {
    if (options.signal.aborted) throw interrupted();
    throw error;
  } finally {
    progress?.stop();
  }
  if (options.signal.aborted) throw interrupted();
  if (estimator) return { ...done(plan.report, null, 0, plan), dryRun: true, estimate: estimator.estimate };
  // Nothing to append: the session is not touched. `--output` still gets its copy, so a run with
  // nothing to do leaves the file asked for — but not when batches failed: that copy would stand in
  // for the run the model never answered, and a run again would be refused for it without --force.
  if (options.dryRun || (plan.entries.length === 0 && (!options.output || plan.report.batches.failed > 0))) return done(plan.report, null, 0, plan);
  await refuseIfOpenNow(session, options);
  const { written, bytesAppended } = await commitRun(session, plan, { output: options.output, base }, { migration });
  return done(plan.report, written, bytesAppended, plan);
}

/**
 * What the plan adds on disk (nothing without a plan).
 * @param appended the bytes a write appended (serialized once, by the write), when it wrote
 */
function diskGrowth(session: Session, plan: RunPlan | undefined, appended?: number): DiskGrowth {
  const entries = plan?.entries ?? [];
  const sidecars = plan?.sidecars ?? [];
  return {
    fileBytes: session.size,
    appendBytes: appended ?? (entries.length > 0 ? appendedBytes(session, entries) : 0),
    sidecarFiles: sidecars.length,
    sidecarBytes: sidecars.reduce((n, s) => n + Buffer.byteLength(s.text, "utf8"), 0),
    sidecarDirs: [...new Set(sidecars.map((s) => dirname(s.path)))],
  };
}
