/**
 * The summarizer contract shared by the deterministic summarizer and model-backed ones.
 */
import type { SummaryStore } from "./cache-store.js";
import type { SendSlots } from "./slots.js";

/** One tool call as the summarizer sees it. */
export interface SummaryCall {
  toolName: string;
  args: unknown;
  resultText: string;
  isError: boolean;
  /** Set when the output was spilled to a sidecar: its size in bytes (`resultText` is then its head preview). */
  spilledBytes?: number;
}

/** A batch to summarize: the assistant's prose and its calls, labelled `[[1:name]]`, `[[2:name]]`, … */
export interface SummaryBatch {
  assistantText: string;
  calls: SummaryCall[];
  /** The calls' occurrence keys (`toolCallId@resultTimestamp`), in label order: who they are, for reuse; never sent to a model. */
  keys?: string[];
}

export interface SummarizerUsage {
  input: number;
  output: number;
  /** USD. */
  cost: number;
}

export type SummarizerResult =
  | {
      ok: true;
      text: string;
      usage?: SummarizerUsage;
      /** `provider/id` of the model that answered (model-backed summarizers). */
      model?: string;
      /** Not asked of a model now: taken from the summary cache, or from summaries already stored in the session. */
      reused?: "cache" | "session";
    }
  | {
      ok: false;
      /** `auth` and `unusable` never trigger the outage fallback; `transient` does. */
      kind: "auth" | "unusable" | "transient" | "aborted";
      reason: string;
      usage?: SummarizerUsage;
    };

/** Answers not asked of a model now, by where they came from (see `SummarizerResult.reused`). */
export interface ReuseCounts {
  cache: number;
  session: number;
}

export interface Summarizer {
  /** Shown in reports: "deterministic" or "provider/model". */
  readonly name: string;
  /** True when calls cost nothing and need no network (the deterministic summarizer). */
  readonly local: boolean;
  /**
   * True when `summarizeBatch` honours its `slots` (each request it sends holds one while it is on
   * the wire): the caller may then start more calls than it has slots.
   */
  readonly slotted?: boolean;
  /** Model-backed: the thinking level sent with each request (`off` when none is); part of the cache key. */
  readonly thinking?: string;
  /**
   * Summarize one batch; the answer uses `[[N:toolname]]` labels at the start of each call's first
   * bullet. With `slots`, a {@link slotted} summarizer holds one of them for each request it has on
   * the wire.
   */
  summarizeBatch(batch: SummaryBatch, signal?: AbortSignal, slots?: SendSlots): Promise<SummarizerResult>;
  /** Fuse several per-batch summaries of one closed chain into one (docs/design.md §6 step 8). */
  fuseRange(bodies: string[], signal?: AbortSignal): Promise<SummarizerResult>;
}

/** Retries of one model call (llm.ts). */
export interface RetryPolicy {
  /** Retries after the first request (0 = none). */
  maxRetries: number;
  /** Delay before retry k is `baseDelayMs * 2^(k-1)`, capped by `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface SummarizerChoice {
  /** `--summarizer`. */
  kind?: "deterministic" | "llm";
  /** `--model provider/id`. */
  model?: string;
  /** `--fallback-model provider/id`: where transient failures of the summarizer model go. */
  fallbackModel?: string;
  /** `--no-cache`: false turns the summary cache off (default on, unless `CONDENSE_CACHE=off`). */
  cache?: boolean;
}

/** Environment and hooks, for tests and the CLI. */
export interface SummarizerDeps {
  env?: NodeJS.ProcessEnv;
  /** The summary cache for model-written summaries, or null for none (default: the platform's folder, from the process's own environment — see cache-store.ts). */
  cache?: SummaryStore | null;
  /** Fallback notices and other one-line messages. */
  onNotice?: (message: string) => void;
  retry?: Partial<RetryPolicy>;
  fallbackCooldownMs?: number;
}
