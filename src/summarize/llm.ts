/**
 * Model-written summaries through pi-ai (docs/design.md §3, §6; docs/design.md "Summarizer
 * outage fallback").
 *
 * One streamed request per batch (or per range fusion) with:
 * - an idle timeout (no stream event for `idleTimeoutMs`) and a total timeout (`maxTimeoutMs`) per
 *   request; a timed-out request counts as a transient failure;
 * - bounded retries with exponential backoff for the failures pi-ai classifies as transient
 *   (`isRetryableAssistantError`: 429, 5xx, dropped connections, timeouts), never for the rest;
 * - the outage fallback: when the configured model fails transiently after its retries and a
 *   distinct fallback model exists (the session's model, or `--fallback-model`), the batch is
 *   retried once on the fallback; if that succeeds the run switches to the fallback (one notice)
 *   and, after a cooldown, one call probes the configured model again. An auth failure or an
 *   unusable answer (empty, or cut at the output limit) never triggers it; an abort ends at once.
 *
 * Results never throw: every outcome is a {@link SummarizerResult}. Usage sums every request made
 * for the call (retries and fallback included); cost is pi-ai's (`usage.cost.total`, USD).
 */
import {
  isRetryableAssistantError,
  retryDelayMs,
  type Api,
  type AssistantMessage,
  type Context,
  type Model,
  type Models,
  type ThinkingLevel,
} from "@earendil-works/pi-ai";
import { performance } from "node:perf_hooks";
import type { ThinkingSetting } from "../config/config.js";
import { batchRequest, fusionRequest, type SummaryRequest } from "./prompt.js";
import type { ModelClient, ModelStreamOptions } from "./runtime.js";
import type { SendSlots } from "./slots.js";
import type { RetryPolicy, Summarizer, SummarizerResult, SummarizerUsage, SummaryBatch } from "./types.js";
import { addUsage, hasUsage, sumUsage, zeroUsage } from "./usage.js";

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, baseDelayMs: 1000, maxDelayMs: 30_000 };
/** How long the run stays on the fallback before one call probes the configured model again. */
export const FALLBACK_COOLDOWN_MS = 10 * 60 * 1000;

export interface LlmSummarizerOptions {
  /** pi-ai's `streamSimple` contract: a `Models` collection (tests use the faux provider) or runtime.ts `buildModels`. */
  models: Pick<Models, "streamSimple"> | ModelClient;
  model: Model<Api>;
  /** Where transient failures of `model` go; omitted or equal to `model` = no fallback. */
  fallback?: Model<Api> | null;
  thinking?: ThinkingSetting;
  idleTimeoutMs: number;
  maxTimeoutMs: number;
  retry?: Partial<RetryPolicy>;
  fallbackCooldownMs?: number;
  /** One-line notices for the user (fallback entered / left, or failing with none). */
  onNotice?: (message: string) => void;
  /** Why there is no fallback although one was looked for (the session's model cannot be used): said once, at the first transient failure. */
  noFallback?: string;
  /** Clock for the fallback cooldown (epoch ms). */
  now?: () => number;
}

const AUTH_FAILURE =
  /(?<![0-9])(?:401|403)(?![0-9])|unauthori[sz]ed|forbidden|authentication|invalid[ _-]?(?:api[ _-]?key|x-api-key|token|credentials)|incorrect api key|no api key|api key (?:not|is) (?:valid|set|found)|permission[ _-]denied/i;

/** A response's usage in summarizer terms (tokens in and out, cost in USD); zero when it has none. */
function usageOf(message: AssistantMessage): SummarizerUsage {
  const u = message.usage;
  return { input: u?.input ?? 0, output: u?.output ?? 0, cost: u?.cost?.total ?? 0 };
}

/** The answer: text blocks joined with a newline (thinking left out). */
export function answerText(message: AssistantMessage): string {
  return message.content
    .filter((b): b is { type: "text"; text: string } => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

function modelName(model: Model<Api>): string {
  return `${model.provider}/${model.id}`;
}

function errorMessage(model: Model<Api>, error: unknown): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "error",
    errorMessage: error instanceof Error ? error.message : String(error),
    timestamp: Date.now(),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Resolves in a later turn of the event loop. Calls started together (a flush starts many at once)
 * are each prepared in a turn of their own: a request is written to its connection before the next
 * one is prepared, so the server starts on the first while the client builds the rest, instead of
 * receiving all of them after the last is built.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Outcome {
  result: SummarizerResult;
  /** True when the failure may be helped by another model. */
  transient: boolean;
}

/** The reasoning level sent for a `summarizerThinking` setting: none for `default` and `off`. */
export function sentThinking(setting: ThinkingSetting | undefined): ThinkingLevel | undefined {
  return setting === undefined || setting === "default" || setting === "off" ? undefined : (setting as ThinkingLevel);
}

/** Build the LLM {@link Summarizer}. */
export function createLlmSummarizer(options: LlmSummarizerOptions): Summarizer {
  return new LlmSummarizer(options);
}

class LlmSummarizer implements Summarizer {
  readonly name: string;
  readonly local = false;
  readonly slotted = true;
  private readonly retry: RetryPolicy;
  private readonly fallback: Model<Api> | null;
  private readonly reasoning: ThinkingLevel | undefined;
  private readonly now: () => number;
  private readonly cooldownMs: number;
  /** Set while the run is on the fallback: when it switched (epoch ms). */
  private fallbackSince: number | null = null;
  private probing = false;
  /** The missing fallback was mentioned (see `noFallback`). */
  private toldNoFallback = false;

  constructor(private readonly options: LlmSummarizerOptions) {
    this.name = modelName(options.model);
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    const fb = options.fallback;
    this.fallback = fb && !(fb.provider === options.model.provider && fb.id === options.model.id) ? fb : null;
    this.reasoning = sentThinking(options.thinking);
    this.now = options.now ?? Date.now;
    this.cooldownMs = options.fallbackCooldownMs ?? FALLBACK_COOLDOWN_MS;
  }

  /** The thinking level sent with every request (`off` when none is). */
  get thinking(): string {
    return this.reasoning ?? "off";
  }

  summarizeBatch(batch: SummaryBatch, signal?: AbortSignal, slots?: SendSlots): Promise<SummarizerResult> {
    return this.call(batchRequest(batch), signal, slots);
  }

  fuseRange(bodies: string[], signal?: AbortSignal): Promise<SummarizerResult> {
    return this.call(fusionRequest(bodies), signal);
  }

  /**
   * One call under `slots`: when its requests can wait for their slot inside the client (no
   * fallback to route to, a model whose requests go through condense's HTTP client), each request
   * is built at once and takes a slot only to be sent; otherwise the call takes one slot for all
   * its requests — its route (configured model, fallback, probe) is decided once it has it, as
   * without slots.
   */
  private async call(request: SummaryRequest, signal?: AbortSignal, slots?: SendSlots): Promise<SummarizerResult> {
    const models = this.options.models;
    if (!slots || (!this.fallback && "queuesAtSend" in models && models.queuesAtSend?.(this.options.model))) return this.route(request, signal, slots);
    const release = await slots.acquire(signal);
    if (!release) return { ok: false, kind: "aborted", reason: "aborted" };
    try {
      return await this.route(request, signal);
    } finally {
      release();
    }
  }

  /** Route one call through the configured model and, on a transient failure, the fallback. */
  private async route(request: SummaryRequest, signal?: AbortSignal, slots?: SendSlots): Promise<SummarizerResult> {
    const context: Context = { systemPrompt: request.system, messages: [{ role: "user", content: request.user, timestamp: 0 }] };
    const primary = this.options.model;
    const fallback = this.fallback;
    if (!fallback) {
      const only = await this.attempt(primary, context, signal, slots);
      if (only.transient && this.options.noFallback && !this.toldNoFallback) {
        this.toldNoFallback = true;
        this.options.onNotice?.(
          `${modelName(primary)} is failing (${only.result.ok ? "" : only.result.reason}) and there is no fallback: ${this.options.noFallback}; ` +
            "name one with --fallback-model provider/id",
        );
      }
      return only.result;
    }

    if (this.fallbackSince !== null) {
      const probeDue = !this.probing && this.now() - this.fallbackSince >= this.cooldownMs;
      if (!probeDue) return (await this.attempt(fallback, context, signal)).result;
      this.probing = true;
      const probe = await this.attempt(primary, context, signal).finally(() => (this.probing = false));
      if (probe.result.ok) {
        this.fallbackSince = null;
        this.options.onNotice?.(`${modelName(primary)} answers again; summarizing with it from now on`);
        return probe.result;
      }
      if (probe.result.kind === "aborted") return probe.result;
      this.fallbackSince = this.now();
      return combine(probe.result, (await this.attempt(fallback, context, signal)).result);
    }

    const first = await this.attempt(primary, context, signal);
    if (first.result.ok || !first.transient) return first.result;
    const second = await this.attempt(fallback, context, signal);
    if (second.result.ok && this.fallbackSince === null) {
      this.fallbackSince = this.now();
      this.options.onNotice?.(
        `${modelName(primary)} is failing (${first.result.reason}); summarizing with ${modelName(fallback)} instead, ` +
          `trying ${modelName(primary)} again every ${Math.round(this.cooldownMs / 60000)} min`,
      );
    }
    return combine(first.result, second.result);
  }

  /** One model, with retries on transient errors (each request waiting for one of `slots` to be sent, when given). */
  private async attempt(model: Model<Api>, context: Context, signal?: AbortSignal, slots?: SendSlots): Promise<Outcome> {
    const usage = zeroUsage();
    const withUsage = (r: SummarizerResult): SummarizerResult => (hasUsage(usage) ? { ...r, usage } : r);
    for (let attempt = 0; ; attempt++) {
      const message = await this.request(model, context, signal, slots);
      addUsage(usage, usageOf(message));
      if (signal?.aborted || message.stopReason === "aborted") {
        return { result: { ok: false, kind: "aborted", reason: "aborted", ...(hasUsage(usage) ? { usage } : {}) }, transient: false };
      }
      if (message.stopReason === "error") {
        const text = message.errorMessage || "unknown error";
        if (AUTH_FAILURE.test(text) && !isRetryableAssistantError(message)) {
          return { result: withUsage({ ok: false, kind: "auth", reason: `${modelName(model)}: ${text}` }), transient: false };
        }
        if (attempt < this.retry.maxRetries && isRetryableAssistantError(message)) {
          const delay = retryDelayMs({ baseDelayMs: this.retry.baseDelayMs, maxAgentDelayMs: this.retry.maxDelayMs }, attempt + 1);
          if (!(await sleep(delay, signal)))
            return { result: { ok: false, kind: "aborted", reason: "aborted", ...(hasUsage(usage) ? { usage } : {}) }, transient: false };
          continue;
        }
        const tries = attempt + 1;
        return {
          result: withUsage({ ok: false, kind: "transient", reason: `${modelName(model)}: ${text}${tries > 1 ? ` (${tries} attempts)` : ""}` }),
          transient: true,
        };
      }
      const text = answerText(message);
      if (message.stopReason === "length") {
        return { result: withUsage({ ok: false, kind: "unusable", reason: `${modelName(model)}: the answer was cut at the output limit` }), transient: false };
      }
      if (text.trim() === "") {
        return { result: withUsage({ ok: false, kind: "unusable", reason: `${modelName(model)}: empty answer` }), transient: false };
      }
      return { result: withUsage({ ok: true, text, model: modelName(model) }), transient: false };
    }
  }

  /**
   * One streamed request under the idle and total timeouts; never throws. With `slots`, the request
   * is built at once and waits for its slot inside the client; the timeouts run from when it is sent.
   */
  private async request(model: Model<Api>, context: Context, outer?: AbortSignal, slots?: SendSlots): Promise<AssistantMessage> {
    await nextTurn();
    if (outer?.aborted) return { ...errorMessage(model, "aborted"), stopReason: "aborted" };
    const controller = new AbortController();
    const onOuterAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onOuterAbort, { once: true });
    const timers = new RequestTimers(controller, this.options);
    try {
      const streamOptions: ModelStreamOptions = { signal: controller.signal, maxRetries: 0 };
      if (this.reasoning) streamOptions.reasoning = this.reasoning;
      if (slots) {
        streamOptions.send = { slots, onSend: () => timers.start() };
        streamOptions.timeoutMs = queuedSdkTimeoutMs(this.options.maxTimeoutMs);
      } else timers.start();
      const stream = this.options.models.streamSimple(model, context, streamOptions);
      for await (const _event of stream) timers.touch();
      const message = await stream.result();
      if (timers.timedOut !== null && !outer?.aborted) return { ...message, stopReason: "error", errorMessage: timers.timedOut };
      return message;
    } catch (error) {
      if (outer?.aborted) return { ...errorMessage(model, "aborted"), stopReason: "aborted" };
      return errorMessage(model, timers.timedOut ?? error);
    } finally {
      timers.stop();
      outer?.removeEventListener("abort", onOuterAbort);
    }
  }
}

/**
 * The provider SDK's own request timeout for a request that waits for its send slot inside the
 * client: the SDK's clock starts when it builds the request, before the wait. A flush starts at
 * most three times `--concurrency` calls (flush.ts), so a request waits for at most two exchanges
 * ahead of it, each ended by condense's own total timeout (`maxTimeoutMs`), and then takes at most
 * that itself: four times `maxTimeoutMs` covers it, and never less than the SDKs' default of 10
 * minutes. Once sent, condense's idle and total timeouts are the ones that end it.
 */
export function queuedSdkTimeoutMs(maxTimeoutMs: number): number {
  return Math.max(600_000, 4 * maxTimeoutMs);
}

/**
 * The idle timeout (no stream event for `idleTimeoutMs`) and the total timeout of one request,
 * from `start()`: either aborts `controller` with its reason, kept in `timedOut`.
 */
class RequestTimers {
  timedOut: string | null = null;
  private total: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;
  private lastEvent = 0;

  constructor(
    private readonly controller: AbortController,
    private readonly limits: { idleTimeoutMs: number; maxTimeoutMs: number },
  ) {}

  start(): void {
    if (this.total !== undefined || this.controller.signal.aborted) return;
    const { idleTimeoutMs, maxTimeoutMs } = this.limits;
    this.total = setTimeout(() => this.fire(`timed out: no complete answer within ${maxTimeoutMs} ms (summarizerMaxTimeoutMs)`), maxTimeoutMs);
    // One idle timer, re-armed lazily: an event only records its time.
    this.lastEvent = performance.now();
    const checkIdle = () => {
      const quiet = performance.now() - this.lastEvent;
      if (quiet >= idleTimeoutMs) this.fire(`timed out: no data for ${idleTimeoutMs} ms (summarizerIdleTimeoutMs)`);
      else this.idle = setTimeout(checkIdle, idleTimeoutMs - quiet);
    };
    this.idle = setTimeout(checkIdle, idleTimeoutMs);
  }

  touch(): void {
    this.lastEvent = performance.now();
  }

  stop(): void {
    clearTimeout(this.total);
    clearTimeout(this.idle);
  }

  private fire(why: string): void {
    if (this.timedOut === null && !this.controller.signal.aborted) {
      this.timedOut = why;
      this.controller.abort(new Error(why));
    }
  }
}

/** The fallback's result, with both calls' usage and, on failure, both reasons. */
function combine(first: SummarizerResult, second: SummarizerResult): SummarizerResult {
  const usage = sumUsage(first.usage, second.usage);
  const withUsage = hasUsage(usage) ? { usage } : {};
  if (second.ok) return { ...second, ...withUsage };
  if (second.kind === "aborted" || first.ok) return { ...second, ...withUsage };
  return { ...second, reason: `${first.reason}; fallback ${second.reason}`, ...withUsage };
}
