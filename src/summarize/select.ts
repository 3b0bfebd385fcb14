/**
 * Choosing the summarizer (docs/design.md §3): deterministic unless a model is named by `--model`
 * or by a concrete `summarizerModel`; `--summarizer llm` with `default` uses the session's own model.
 * A model-backed one answers through the summary cache (cache.ts) when the caller passes a store.
 * The model-backed summarizer is built by llm-setup.ts, loaded only when a model is asked for.
 */
import type { PruneConfig } from "../config/config.js";
import type { Session } from "../session/session.js";
import { cachingSummarizer } from "./cache.js";
import { summaryStore } from "./cache-store.js";
import { deterministicSummarizer } from "./deterministic.js";
import { emptyEstimate, type Estimate, estimatingSummarizer } from "./estimate.js";
import { UsageError } from "../util/errors.js";
import type { Summarizer, SummarizerChoice, SummarizerDeps } from "./types.js";

/** What the choice resolves to, before any model is looked up. */
export function summarizerKind(choice: SummarizerChoice, config: PruneConfig): "deterministic" | "llm" {
  if (choice.kind === "deterministic") return "deterministic";
  if (choice.kind === "llm" || choice.model || config.summarizerModel !== "default") return "llm";
  return "deterministic";
}

/**
 * Build the summarizer for a session.
 * @throws UsageError when a model is asked for and cannot be used: bad reference, unknown
 *   provider or model, missing API key (naming the environment variables pi-ai reads), OAuth-only
 *   credentials, unusable auth.json / models.json
 */
export async function createSummarizer(choice: SummarizerChoice, config: PruneConfig, session: Session, deps: SummarizerDeps = {}): Promise<Summarizer> {
  if (summarizerKind(choice, config) === "deterministic") return deterministicSummarizer;
  const { createModelSummarizer } = await import("./llm-setup.js");
  try {
    const summarizer = await createModelSummarizer(choice, config, session, deps);
    const cache = deps.cache !== undefined ? deps.cache : summaryStore(choice.cache !== false);
    return cache ? cachingSummarizer(summarizer, cache, deps.onNotice) : summarizer;
  } catch (error) {
    // When only the configuration asked for a model, say so: the user may not know it did.
    if (error instanceof UsageError && choice.kind === undefined && !choice.model) {
      throw new UsageError(
        `${error.message}\n(summarizerModel=${config.summarizerModel} in the configuration — e.g. Pi's settings.json contextPrune — ` +
          "selects model-written summaries; pass --summarizer deterministic to summarize without a model)",
      );
    }
    throw error;
  }
}

/**
 * The summarizer of `run --estimate` and what it counts into: no model is called (see estimate.ts).
 * @throws UsageError when the model asked for is not known (a missing key is not an error here)
 */
export async function createEstimator(
  choice: SummarizerChoice,
  config: PruneConfig,
  session: Session,
  deps: SummarizerDeps = {},
): Promise<{ summarizer: Summarizer; estimate: Estimate }> {
  if (summarizerKind(choice, config) === "deterministic") {
    const estimate = emptyEstimate(null);
    return { summarizer: estimatingSummarizer(null, "off", null, estimate), estimate };
  }
  const [{ resolveSummarizerModel }, { sentThinking }] = await Promise.all([import("./llm-setup.js"), import("./llm.js")]);
  const model = resolveSummarizerModel(choice, config, session, deps.env);
  const cache = deps.cache !== undefined ? deps.cache : summaryStore(choice.cache !== false);
  const estimate = emptyEstimate(model);
  return { summarizer: estimatingSummarizer(model, sentThinking(config.summarizerThinking) ?? "off", cache, estimate), estimate };
}
