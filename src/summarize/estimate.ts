/**
 * `run --estimate` (issue 16 "no estimate before spending"): a {@link Summarizer} that calls no model
 * and counts what the model-backed one would send — the requests, their input tokens (Pi's
 * estimate, `ceil(chars / 4)` of system prompt plus user message), the answers already in the
 * summary cache (free), and the expected cost at pi-ai's price for the model (`calculateCost`, per
 * request, so tiered prices apply). The output is not known before asking; it is estimated as the
 * size of the deterministic summary of the same batch (one short bullet per call plus the lines that
 * matter), which is also what it answers so the plan goes on (chains still get their fusion request).
 */
import type { SummaryStore } from "./cache-store.js";
import { summaryCacheKey } from "./cache.js";
import { fuseDeterministically, summarizeDeterministically } from "./deterministic.js";
import { batchRequest, fusionRequest, type SummaryRequest } from "./prompt.js";
import type { Summarizer, SummarizerResult, SummaryBatch } from "./types.js";

/** What a run would cost, before it runs. */
export interface Estimate {
  /** `provider/id`, or null for the deterministic summarizer (no model, no cost). */
  model: string | null;
  /** Batch summaries and chain fusions the model would be asked for (cached ones not included; the deterministic summarizer's own with no model). */
  batches: number;
  fusions: number;
  /** Requests the summary cache already answers. */
  cached: number;
  /** Estimated tokens: input `ceil(chars / 4)` of each request; output from the deterministic summary's size. */
  inputTokens: number;
  outputTokens: number;
  /** Expected cost in USD at pi-ai's price for the model (0 when it has none). */
  cost: number;
  /** False when pi-ai knows no price for the model (every rate 0). */
  priced: boolean;
}

/** Pi's token estimate of a text: `ceil(chars / 4)`. */
const tokensOf = (chars: number) => Math.ceil(chars / 4);

/** A model and its price (llm-setup.ts `pricedModel`: pi-ai's `calculateCost`). */
export interface PricedModel {
  /** `provider/id`. */
  name: string;
  /** False when no price is known (every rate 0). */
  priced: boolean;
  /** USD for one request of `input` and `output` tokens. */
  price(input: number, output: number): number;
}

/** An empty estimate for `model`. */
export function emptyEstimate(model: PricedModel | null): Estimate {
  return { model: model?.name ?? null, batches: 0, fusions: 0, cached: 0, inputTokens: 0, outputTokens: 0, cost: 0, priced: !!model?.priced };
}

/**
 * The estimating summarizer: answers deterministically, counts into `estimate`.
 * @param model the model a real run would use, or null (deterministic: requests counted, no tokens, no cost)
 * @param thinking the thinking level a real run would send (part of the cache key)
 * @param store the summary cache, consulted (never written; a cached answer is what the plan goes on with), or null
 */
export function estimatingSummarizer(model: PricedModel | null, thinking: string, store: SummaryStore | null, estimate: Estimate): Summarizer {
  const name = model?.name ?? "deterministic";
  const count = async (kind: "batch" | "fusion", request: SummaryRequest, answer: string): Promise<SummarizerResult> => {
    if (!model) {
      // The deterministic summarizer: the same requests, answered locally at no cost.
      if (kind === "batch") estimate.batches++;
      else estimate.fusions++;
      return { ok: true, text: answer };
    }
    const hit = store ? await store.get(summaryCacheKey(kind, { model: name, thinking }, request)) : null;
    if (hit && hit.model === name) {
      // The real answer: a chain's fusion request is then the one the run will send.
      estimate.cached++;
      return { ok: true, text: hit.text, reused: "cache" };
    }
    if (kind === "batch") estimate.batches++;
    else estimate.fusions++;
    const input = tokensOf(request.system.length + request.user.length);
    const output = tokensOf(answer.length);
    estimate.inputTokens += input;
    estimate.outputTokens += output;
    estimate.cost += model.price(input, output);
    return { ok: true, text: answer };
  };
  return {
    name,
    local: !model,
    thinking,
    summarizeBatch: (batch: SummaryBatch) => count("batch", batchRequest(batch), summarizeDeterministically(batch)),
    fuseRange: (bodies: string[]) => count("fusion", fusionRequest(bodies), fuseDeterministically(bodies)),
  };
}
