/**
 * What `render` prints (docs/design.md §7): the context of a session as read, or with `--dry-run`
 * as it would be after `run` — planned in memory with the chosen summarizer, nothing written —
 * as Pi sends it with the pi-condense extension switched on, or (`--as pi-only`) as stock Pi
 * sends it without the extension.
 */
import { renderBranch, type Rendered } from "../render/render.js";
import { createSummarizer } from "../summarize/select.js";
import type { SummarizerChoice } from "../summarize/types.js";
import { nowMs } from "../util/clock.js";
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
 * Render a session as read, or — with `dryRun` — after a run planned in memory for `dryRun.runFor`
 * (whom the run writes for: with the `pi` target, its context edits are part of what stock Pi sends).
 * @param as `pi-only`: the result's `after`/`afterAgent` are Pi's projection, with no phases and
 *   no diagnostics (nothing is pruned)
 * @throws UsageError when the summarizer asked for cannot be used
 */
export async function renderSession(view: SessionView, dryRun: (SummarizerChoice & { runFor?: RunFor }) | null, as: RenderAs = "extension"): Promise<Rendered> {
  const rendered = await renderExtension(view, dryRun);
  if (as === "extension") return rendered;
  const { before, beforeAgent } = rendered;
  return { before, beforeAgent, after: before, afterAgent: beforeAgent, phases: [], diagnostics: [] };
}

async function renderExtension(view: SessionView, dryRun: (SummarizerChoice & { runFor?: RunFor }) | null): Promise<Rendered> {
  if (!dryRun) return view.rendered;
  const summarizer = await createSummarizer(dryRun, view.config, view.session);
  const plan = await planRun(view, {
    summarizer,
    concurrency: DRY_RUN_CONCURRENCY,
    nowMs: nowMs(),
    targetPath: view.session.path,
    target: dryRun.runFor?.target,
    recovery: dryRun.runFor?.recovery,
  });
  return renderBranch(plan.afterBranch, view.config);
}
