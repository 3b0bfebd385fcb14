/**
 * Choosing the summarizer (SPEC.md section 3): deterministic unless a model is named by `--model`
 * or by a concrete `summarizerModel`; `--summarizer llm` with `default` uses the session's own model.
 */
import type { PruneConfig } from "../config/config.js";
import type { Session } from "../session/session.js";
import { UsageError } from "../util/errors.js";
import { deterministicSummarizer } from "./deterministic.js";
import type { Summarizer } from "./types.js";

export interface SummarizerChoice {
  /** `--summarizer`. */
  kind?: "deterministic" | "llm";
  /** `--model provider/id`. */
  model?: string;
}

/** What the choice resolves to, before any model is looked up. */
export function summarizerKind(choice: SummarizerChoice, config: PruneConfig): "deterministic" | "llm" {
  if (choice.kind === "deterministic") return "deterministic";
  if (choice.kind === "llm" || choice.model || config.summarizerModel !== "default") return "llm";
  return "deterministic";
}

/**
 * Build the summarizer for a session.
 * @throws UsageError when a model is asked for and cannot be used
 */
export async function createSummarizer(choice: SummarizerChoice, config: PruneConfig, _session: Session): Promise<Summarizer> {
  if (summarizerKind(choice, config) === "deterministic") return deterministicSummarizer;
  throw new UsageError("model-written summaries are not available yet; use the deterministic summarizer (the default)");
}
