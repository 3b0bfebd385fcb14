/**
 * `compact` for one session (docs/design.md §10): open it for writing (refuse a live session,
 * migrate a v1/v2 file when `--migrate` asks — the same write side as `run`), read Pi's settings
 * for its project and its model's context window, choose the summary (zero-model, or Pi's prompts
 * through a model), plan the compaction, then commit the entry — unless it is a dry run. Runs in
 * worker threads for archives (the zero-model path), so its options are structured-cloneable and
 * what the user sees comes back in the report (`warnings`).
 */
import { localSummary } from "../compact/local-summary.js";
import { CompactionModels } from "../compact/model.js";
import { modelSummary } from "../compact/model-summary.js";
import { sessionCompactionSettings, type CompactionSettings, type SessionCompactionSettings } from "../compact/settings.js";
import { loadConfig } from "../config/config.js";
import { loadModelRegistry, registryWindow } from "../report/budget.js";
import { commitRun, openForWrite, refuseIfOpenNow, type WriteOptions } from "../session/commit.js";
import type { Session } from "../session/session.js";
import { sessionModelRef } from "../summarize/model-resolve.js";
import { nowMs } from "../util/clock.js";
import { CondenseError } from "../util/errors.js";
import { planCompaction, type CompactionPlan, type SummarizeFn } from "./compact-plan.js";
import { compactReport, type CompactFacts, type CompactFileResult, type WindowSource } from "./compact-report.js";
import { decideTarget } from "./target.js";
import { sessionView } from "./view.js";

/** Everything a compaction of one file needs; structured-cloneable (worker threads get a copy). */
export interface CompactSessionOptions extends WriteOptions {
  /** `--instructions`: focus for the summary, stored on the entry. */
  instructions?: string;
  /** `"pi"`: Pi's own trigger; a number: that fraction of the window; absent: always compact. */
  ifOver?: "pi" | number;
  /** `--context-window` (tokens), instead of pi-ai's model registry. */
  contextWindow?: number;
  /** `--reserve-tokens`, `--keep-recent-tokens`, `--compaction-enabled`. */
  flags: Partial<CompactionSettings>;
  summarizer: { kind: "deterministic" } | { kind: "llm"; model?: string; thinking?: string };
}

/** What the in-process path shares between files and with the terminal (never sent to a worker). */
export interface CompactRuntime {
  /** Ctrl-C: an in-flight summary request aborts and nothing is written (exit 130). */
  signal?: AbortSignal;
  /** Models resolved once for every session. */
  models?: CompactionModels;
  /** A one-line status for a spinner. */
  onProgress?: (text: string) => void;
}

/** The session model's context window: `--context-window`, else pi-ai's registry, else unknown. */
async function contextWindowOf(session: Session, override: number | undefined): Promise<{ window: number | null; from: WindowSource }> {
  if (override !== undefined) return { window: override, from: "override" };
  const ref = sessionModelRef(session.branch);
  if (!ref) return { window: null, from: "unknown" };
  await loadModelRegistry();
  const window = registryWindow(ref.provider, ref.id) ?? null;
  return { window, from: window === null ? "unknown" : "registry" };
}

/**
 * The summary function for one session and its name: Pi's requests through the chosen model, or
 * the zero-model summary.
 * @throws UsageError when the model cannot be used (see {@link CompactionModels.forSession})
 */
async function summaryFor(
  session: Session,
  options: CompactPlanningOptions,
  runtime: CompactRuntime,
  pi: SessionCompactionSettings,
): Promise<{ name: string; summarize: SummarizeFn }> {
  if (options.summarizer.kind === "llm") {
    const models = runtime.models ?? new CompactionModels(options.summarizer);
    const request = await models.forSession(session);
    const name = `${request.model.provider}/${request.model.id}`;
    const summarize: SummarizeFn = (prep) => {
      runtime.onProgress?.(`summarizing with ${name}`);
      return modelSummary(prep, { ...request, retry: pi.retry, signal: runtime.signal }, options.instructions);
    };
    return { name, summarize };
  }
  const cwd = typeof session.header?.cwd === "string" ? session.header.cwd : undefined;
  const context = { cwd, model: pi.model ?? undefined, customInstructions: options.instructions };
  return { name: "deterministic", summarize: async (prep) => ({ text: localSummary(prep, context) }) };
}

/** What planning needs: the options that are not about writing. */
export type CompactPlanningOptions = Pick<CompactSessionOptions, "instructions" | "ifOver" | "contextWindow" | "flags" | "summarizer">;

/** A planned compaction and the facts its report states besides the plan. */
export interface PlannedCompaction {
  plan: CompactionPlan;
  facts: Pick<CompactFacts, "summarizer" | "model" | "settingsFiles" | "contextWindow" | "contextWindowFrom" | "target">;
  /** Settings files that could not be read. */
  warnings: string[];
}

/**
 * Plan the compaction of a loaded session, nothing written: Pi's settings for its project (its
 * header cwd), its model's window, the summary (zero-model, or Pi's requests through a model).
 * @throws UsageError for bad settings or an unusable model; whatever the summary request throws
 */
export async function planSessionCompaction(session: Session, options: CompactPlanningOptions, runtime: CompactRuntime = {}): Promise<PlannedCompaction> {
  const pi = sessionCompactionSettings(session, options.flags);
  const { window, from } = await contextWindowOf(session, options.contextWindow);
  const summary = await summaryFor(session, options, runtime, pi);
  // The pruning configuration as every command reads it: the context before → after is measured as they measure it.
  const plan = await planCompaction(sessionView(session, loadConfig()), {
    settings: pi.settings,
    summarize: summary.summarize,
    contextWindow: window,
    ifOver: options.ifOver,
    customInstructions: options.instructions,
    nowIso: new Date(nowMs()).toISOString(),
  });
  // Whose context the figures are for: the Pi of the session's project, as `run --target auto` decides it.
  const target = decideTarget("auto", session.header?.cwd);
  const facts = { summarizer: summary.name, model: pi.model, settingsFiles: pi.files, contextWindow: window, contextWindowFrom: from, target };
  return { plan, facts, warnings: pi.warnings };
}

/**
 * Compact one session file.
 * @throws UsageError (exit 2) for an unusable or refused file (v1/v2 without --migrate, existing
 *   --output or backup), bad settings, an unusable model; CondenseError (exit 1) for a live
 *   session, a failed summary request or a refused write (changed, locked); CondenseError (exit
 *   130) when interrupted — nothing was written then
 */
export async function compactSession(file: string, options: CompactSessionOptions, runtime: CompactRuntime = {}): Promise<CompactFileResult> {
  const started = Date.now();
  const warnings: string[] = [];
  let path = file;
  const interrupted = () => new CondenseError(`${path}: interrupted; nothing was written`, 130);
  if (runtime.signal?.aborted) throw interrupted();
  const { session, migration, base, refusal } = await openForWrite(file, options, (m) => warnings.push(m));
  path = session.path;
  const planned = await planSessionCompaction(session, options, runtime).catch((error) => {
    throw runtime.signal?.aborted ? interrupted() : error;
  });
  warnings.push(...planned.warnings);
  const { plan } = planned;
  if (runtime.signal?.aborted) throw interrupted();
  if (plan.entry && !options.dryRun) await refuseIfOpenNow(session, options);
  const write =
    plan.entry && !options.dryRun
      ? await commitRun(session, { entries: [plan.entry], sidecars: [] }, { output: options.output, base }, { op: "compact", migration })
      : null;
  return compactReport(session, plan, {
    ...planned.facts,
    migration,
    dryRun: options.dryRun,
    written: write?.written ?? null,
    bytesAppended: write?.bytesAppended ?? 0,
    warnings,
    wouldRefuse: refusal,
    started,
  });
}

/** URL of this module, for the worker pool (`fn: "compactSession"`). */
export const COMPACT_SESSION_MODULE = import.meta.url;
