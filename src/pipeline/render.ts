/**
 * What `render` prints (docs/design.md §7): the context of a session as read, or with `--dry-run`
 * as it would be after `run` — planned in memory with the chosen summarizer, nothing written —
 * as Pi sends it with the pi-condense extension switched on, or (`--as pi-only`) as stock Pi
 * sends it without the extension. Also the "after" every command reports (docs/design.md
 * "Context size"): the render after a run planned with the deterministic summarizer.
 */
import type { Rendered } from "../render/render.js";
import type { AgentMessage } from "../session/types.js";
import { createSummarizer } from "../summarize/select.js";
import type { SummarizerChoice } from "../summarize/types.js";
import { nowMs } from "../util/clock.js";
import { pendingWork } from "./pending.js";
import { planRun } from "./plan.js";
import type { RunFor } from "./target.js";
import type { SessionView } from "./view.js";

/** Summarizer calls in parallel for a dry-run render (`run`'s default `--concurrency`). */
const DRY_RUN_CONCURRENCY = 4;

/**
 * Whose context `render` shows: `extension` — what Pi sends with pi-condense switched on;
 * `pi-only` — what stock Pi sends without it (its own projection, entries `run` appended
 * included, nothing stubbed).
 */
export type RenderAs = "extension" | "pi-only";

/**
 * The view of the Pi that sends the context for a target (docs/design.md "Context size"): `pi`
 * → stock Pi's own projection (`pi-only`), `extension` → the extension's render. With the target
 * `run --target auto` picks, this is the Pi the user has: `render` shows it by default.
 */
export function sentAs(target: { used: "pi" | "extension" }): RenderAs {
  return target.used === "pi" ? "pi-only" : "extension";
}

/** A dry run: the summarizer, and whom the planned run writes for (default: the extension only). */
export type DryRun = SummarizerChoice & { runFor?: RunFor };

/**
 * Render a session as read, or — with `dryRun` — after a run planned in memory for `dryRun.runFor`
 * (with the `pi` target its context edits are part of what stock Pi sends).
 * @param as `pi-only`: the result's `after`/`afterAgent` are Pi's projection, with no phases and
 *   no diagnostics (nothing is pruned)
 * @throws UsageError when the summarizer asked for cannot be used
 */
export async function renderSession(view: SessionView, dryRun: DryRun | null, as: RenderAs = "extension"): Promise<Rendered> {
  const rendered = await renderExtension(view, dryRun);
  if (as === "extension") return rendered;
  const { before, beforeAgent } = rendered;
  return { before, beforeAgent, after: before, afterAgent: beforeAgent, phases: [], diagnostics: [] };
}

/**
 * The messages Pi sends in a mode, from a render made with the extension's phases: with the
 * extension, the pruned context; without it (`pi-only`), Pi's own projection.
 */
export function sentMessages(rendered: Rendered, as: RenderAs): AgentMessage[] {
  return as === "pi-only" ? rendered.beforeAgent : rendered.afterAgent;
}

async function renderExtension(view: SessionView, dryRun: DryRun | null): Promise<Rendered> {
  if (!dryRun) return view.rendered;
  return renderAfterRun(view, dryRun, dryRun.runFor);
}

/**
 * The render of a session after `run`, planned in memory (nothing written): the render as read
 * when the run would append nothing. Planning advances `view`'s index: read what needs the index
 * as read first, or pass `view.fork()`.
 * @param choice the summarizer (default: the deterministic one — no model, no network)
 * @param runFor whom the run writes for (default: the extension only); with the `pi` target the
 *   result's `beforeAgent` is stock Pi's projection with the planned context edits
 * @throws UsageError when the summarizer asked for cannot be used
 */
export async function renderAfterRun(view: SessionView, choice: SummarizerChoice = { kind: "deterministic" }, runFor?: RunFor): Promise<Rendered> {
  const work = pendingWork(view, runFor);
  // For the extension nothing but summaries, chains and diagnostics changes the render; stock Pi's
  // context also changes with the edits (the recovery index comes with edits that omit results).
  const stockPiWork = runFor?.target.used === "pi" ? work.recoveries + work.edits : 0;
  if (work.batches === 0 && work.chains === 0 && work.diagnostics === 0 && stockPiWork === 0) return view.rendered;
  const summarizer = await createSummarizer(choice, view.config, view.session);
  const plan = await planRun(view, {
    summarizer,
    concurrency: DRY_RUN_CONCURRENCY,
    nowMs: nowMs(),
    targetPath: view.session.path,
    // Only the render is wanted: the entries are never written.
    flushMetrics: false,
    target: runFor?.target,
    recovery: runFor?.recovery,
  });
  return plan.after;
}
