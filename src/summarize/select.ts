/**
 * Choosing the summarizer (docs/design.md §3): deterministic unless a model is named by `--model`
 * or by a concrete `summarizerModel`; `--summarizer llm` with `default` uses the session's own model.
 * The model-backed summarizer is built by llm-setup.ts, loaded only when a model is asked for.
 */
import type { PruneConfig } from "../config/config.js";
import type { Session } from "../session/session.js";
import { deterministicSummarizer } from "./deterministic.js";
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
    return await createModelSummarizer(choice, config, session, deps);
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
