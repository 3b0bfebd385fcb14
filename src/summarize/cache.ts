/**
 * The summary cache (issue 16 "paid twice"): a {@link Summarizer} wrapper that answers a request it
 * has seen before from the {@link SummaryStore} instead of the model, and stores every new answer.
 * The key is the content that decides the answer — the request kind, the model (`provider/id`), the
 * thinking level, the system prompt and the user message (the batch as serialized for the model,
 * or the bodies to fuse) — so `run --dry-run --model …` followed by the real run calls the model
 * once per batch. Only successful answers from the configured model are stored (a fallback's answer
 * is stored under the fallback's name, where a later run on that model finds it). Cached answers
 * come back with `reused: "cache"` and no usage: they cost nothing now.
 */
import { createHash } from "node:crypto";
import type { SummaryStore } from "./cache-store.js";
import { batchRequest, fusionRequest, type SummaryRequest } from "./prompt.js";
import type { SendSlots } from "./slots.js";
import type { Summarizer, SummarizerResult, SummaryBatch } from "./types.js";

/** What besides the request decides an answer. */
export interface CacheKeyParts {
  /** `provider/id`. */
  model: string;
  /** The thinking level sent (`off` when none). */
  thinking: string;
}

/** The content key of one request: sha256 (hex) over kind, model, thinking, system prompt and user message. */
export function summaryCacheKey(kind: "batch" | "fusion", parts: CacheKeyParts, request: SummaryRequest): string {
  return createHash("sha256")
    .update(JSON.stringify(["condense-summary", kind, parts.model, parts.thinking, request.system, request.user]))
    .digest("hex");
}

/** Folders already reported as not writable (once per process, however many sessions and calls). */
const reported = new Set<string>();

/** Told once when the cache folder cannot be used (the run goes on without it). */
export type CacheProblem = (message: string) => void;

/**
 * Wrap a model-backed summarizer with the cache.
 * @param onProblem told (once) when the store cannot be written; reading problems count as misses
 */
export function cachingSummarizer(inner: Summarizer, store: SummaryStore, onProblem: CacheProblem = () => undefined): Summarizer {
  const parts: CacheKeyParts = { model: inner.name, thinking: inner.thinking ?? "off" };
  let writable = true;
  const through = async (kind: "batch" | "fusion", request: SummaryRequest, ask: () => Promise<SummarizerResult>): Promise<SummarizerResult> => {
    const key = summaryCacheKey(kind, parts, request);
    const hit = await store.get(key);
    if (hit && hit.model === parts.model) return { ok: true, text: hit.text, model: hit.model, reused: "cache" };
    const result = await ask();
    if (result.ok && !result.reused && writable) {
      const answeredBy = result.model ?? parts.model;
      const storeKey = answeredBy === parts.model ? key : summaryCacheKey(kind, { ...parts, model: answeredBy }, request);
      await store.put(storeKey, { text: result.text, model: answeredBy, storedAt: new Date().toISOString() }).catch((error: NodeJS.ErrnoException) => {
        writable = false;
        if (reported.has(store.folder)) return;
        reported.add(store.folder);
        onProblem(`the summary cache ${store.folder} cannot be written (${error.code ?? error.message}); going on without storing answers`);
      });
    }
    return result;
  };
  return {
    name: inner.name,
    local: inner.local,
    slotted: inner.slotted,
    thinking: inner.thinking,
    summarizeBatch: (batch: SummaryBatch, signal?: AbortSignal, slots?: SendSlots) =>
      through("batch", batchRequest(batch), () => inner.summarizeBatch(batch, signal, slots)),
    fuseRange: (bodies: string[], signal?: AbortSignal) => through("fusion", fusionRequest(bodies), () => inner.fuseRange(bodies, signal)),
  };
}
