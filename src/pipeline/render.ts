/**
 * What `render` prints (docs/design.md §7): the context of a session as read, or with `--dry-run`
 * as it would be after `run` — planned in memory with the chosen summarizer, nothing written.
 */
import { renderBranch, type Rendered } from "../render/render.js";
import { createSummarizer } from "../summarize/select.js";
import type { SummarizerChoice } from "../summarize/types.js";
import { nowMs } from "../util/clock.js";
import { planRun } from "./plan.js";
import type { SessionView } from "./view.js";

/** Summarizer calls in parallel for a dry-run render (`run`'s default `--concurrency`). */
const DRY_RUN_CONCURRENCY = 4;

/**
 * Render a session as read, or — with `dryRun` — after a run planned in memory.
 * @throws UsageError when the summarizer asked for cannot be used
 */
export async function renderSession(view: SessionView, dryRun: SummarizerChoice | null): Promise<Rendered> {
  if (!dryRun) return view.rendered;
  const summarizer = await createSummarizer(dryRun, view.config, view.session);
  const plan = await planRun(view, {
    summarizer,
    concurrency: DRY_RUN_CONCURRENCY,
    nowMs: nowMs(),
    targetPath: view.session.path,
  });
  return renderBranch(plan.afterBranch, view.config);
}
