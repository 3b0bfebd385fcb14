/**
 * Reusing summaries already stored in the session (issue 16): when a later Pi write left the
 * entries of an earlier run off the active branch, `run` applies them again on the new branch, and
 * this {@link Summarizer} wrapper answers the batches and chain fusions those entries already hold
 * instead of asking the model. A batch is found by its calls' occurrence keys (`SummaryBatch.keys`,
 * in label order), a fusion by the exact summaries it fuses; anything else goes to `inner`.
 * Answers come back with `reused: "session"` and no usage.
 */
import { fusionRequest } from "./prompt.js";
import type { SendSlots } from "./slots.js";
import type { Summarizer, SummaryBatch } from "./types.js";

/** Answers already in a session, as the summarizer gave them (labels, not refs). */
export interface StoredAnswers {
  /** By the batch's occurrence keys joined with "\n". */
  batches: Map<string, string>;
  /** By the fusion request's user message (the bodies, in order). */
  fusions: Map<string, string>;
}

/** The key of a batch in {@link StoredAnswers.batches}. */
export const batchKeyOf = (keys: string[]): string => keys.join("\n");

/** The key of a fusion in {@link StoredAnswers.fusions}. */
export const fusionKeyOf = (bodies: string[]): string => fusionRequest(bodies).user;

/** Wrap `inner` so that what `stored` holds is answered from it. */
export function reusingSummarizer(inner: Summarizer, stored: StoredAnswers): Summarizer {
  return {
    name: inner.name,
    local: inner.local,
    slotted: inner.slotted,
    thinking: inner.thinking,
    summarizeBatch: async (batch: SummaryBatch, signal?: AbortSignal, slots?: SendSlots) => {
      const text = batch.keys ? stored.batches.get(batchKeyOf(batch.keys)) : undefined;
      return text !== undefined ? { ok: true, text, reused: "session" } : inner.summarizeBatch(batch, signal, slots);
    },
    fuseRange: async (bodies: string[], signal?: AbortSignal) => {
      const text = stored.fusions.get(fusionKeyOf(bodies));
      return text !== undefined ? { ok: true, text, reused: "session" } : inner.fuseRange(bodies, signal);
    },
  };
}
