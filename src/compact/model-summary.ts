/**
 * The model-written compaction summary: the requests Pi 1.6's `compact()` sends (pi-coding-agent
 * `dist/core/compaction/compaction.js`), through pi-ai.
 *
 * One request for the history (Pi's first or update prompt, the previous summary in
 * `<previous-summary>`), and for a split turn a second one for the turn's early part; each is a
 * system prompt plus one user message, sent with `cacheRetention: "none"`, a fresh `sessionId`,
 * the thinking level as `reasoning` when the model reasons, and Pi's retry policy
 * (`retryAssistantCall`). An error, a cut answer (`length`) or a tool call fails the compaction,
 * as in Pi: nothing is written.
 */
import {
  contentText,
  normalizeContext,
  retryAssistantCall,
  uuidv7,
  type Api,
  type AssistantMessage,
  type Context,
  type Model,
  type SimpleStreamOptions,
  type ThinkingLevel,
  type Usage,
} from "@earendil-works/pi-ai";
import { RuntimeFailure } from "../util/errors.js";
import type { CompactionPreparation } from "./prepare.js";
import { SUMMARIZATION_SYSTEM_PROMPT } from "./prompts.js";
import { historyPromptText, mergeSplitTurn, turnPrefixPromptText } from "./request.js";
import type { RetrySettings } from "./settings.js";

/** pi-ai's `streamSimple` shape (a provider, a `Models` collection, or runtime.ts `buildModels`). */
export type SummaryStream = (
  model: Model<Api>,
  context: Context,
  options?: SimpleStreamOptions,
) => { result(): Promise<AssistantMessage> } | Promise<{ result(): Promise<AssistantMessage> }>;

export interface SummaryRequestOptions {
  model: Model<Api>;
  stream: SummaryStream;
  /** The session's thinking level (sent as `reasoning` when the model reasons and it is not `off`). */
  thinkingLevel?: ThinkingLevel | "off";
  retry: RetrySettings;
  signal?: AbortSignal;
  /** Told when a request is retried after a transient error. */
  onRetry?: (attempt: number, maxAttempts: number, delayMs: number, error: string) => void;
}

/**
 * Pi's `buildSummarizationContext`: the summarization system prompt and one user message, the
 * prompt already folded into a leading system message (normalizing it again changes nothing).
 */
export function summarizationContext(promptText: string, timestamp = Date.now()): Context {
  const { messages } = normalizeContext({
    systemPrompt: SUMMARIZATION_SYSTEM_PROMPT,
    messages: [{ role: "user", content: [{ type: "text", text: promptText }], timestamp }],
  });
  return { messages };
}

/** Pi's `getSummarizationFailure`: why an answer cannot become a checkpoint, or undefined. */
function failureOf(response: AssistantMessage, label: string): string | undefined {
  if (response.stopReason === "error") return `${label} failed: ${response.errorMessage || "Unknown error"}`;
  if (response.stopReason === "length") return `${label} failed: generation hit the token cap and the summary is incomplete`;
  if (response.stopReason === "aborted") return `${label} aborted`;
  return undefined;
}

async function request(promptText: string, label: string, options: SummaryRequestOptions): Promise<{ text: string; usage: Usage }> {
  const { model } = options;
  const requestOptions: SimpleStreamOptions = {
    signal: options.signal,
    ...(model.reasoning && options.thinkingLevel && options.thinkingLevel !== "off" ? { reasoning: options.thinkingLevel } : {}),
    cacheRetention: "none",
    sessionId: uuidv7(),
  };
  const context = summarizationContext(promptText);
  const produce = async () => (await options.stream(model, context, requestOptions)).result();
  const response = await retryAssistantCall(produce, options.retry, options.signal, {
    onRetryScheduled: (attempt, max, delay, error) => options.onRetry?.(attempt, max, delay, error),
  });
  const failure = failureOf(response, label);
  if (failure) throw new RuntimeFailure(`${model.provider}/${model.id}: ${failure}`);
  if (response.content.some((b) => b.type === "toolCall")) throw new RuntimeFailure(`${model.provider}/${model.id}: ${label} attempted to call a tool`);
  return { text: contentText(response.content), usage: response.usage };
}

/** Pi's `combineUsage`: the sum of two requests' usage. */
export function combineUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    ...(a.cacheWrite1h !== undefined || b.cacheWrite1h !== undefined ? { cacheWrite1h: (a.cacheWrite1h ?? 0) + (b.cacheWrite1h ?? 0) } : {}),
    ...(a.reasoning !== undefined || b.reasoning !== undefined ? { reasoning: (a.reasoning ?? 0) + (b.reasoning ?? 0) } : {}),
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
      totalFromProvider: a.cost.totalFromProvider === true && b.cost.totalFromProvider === true,
    },
  } as Usage;
}

/**
 * The summary text (without the file tags) and its usage, as Pi's `compact()` makes them.
 * @throws RuntimeFailure when a request fails (after Pi's retries), is cut, or calls a tool
 */
export async function modelSummary(
  prep: Pick<CompactionPreparation, "messagesToSummarize" | "turnPrefixMessages" | "isSplitTurn" | "previousSummary">,
  options: SummaryRequestOptions,
  customInstructions?: string,
): Promise<{ text: string; usage: Usage }> {
  if (prep.isSplitTurn && prep.turnPrefixMessages.length > 0) {
    let history = prep.previousSummary ?? "No prior history.";
    let historyUsage: Usage | undefined;
    if (prep.messagesToSummarize.length > 0) {
      const result = await request(historyPromptText(prep.messagesToSummarize, prep.previousSummary, customInstructions), "Summarization", options);
      history = result.text;
      historyUsage = result.usage;
    }
    const prefix = await request(turnPrefixPromptText(prep.turnPrefixMessages, customInstructions), "Turn prefix summarization", options);
    return { text: mergeSplitTurn(history, prefix.text), usage: historyUsage ? combineUsage(historyUsage, prefix.usage) : prefix.usage };
  }
  return request(historyPromptText(prep.messagesToSummarize, prep.previousSummary, customInstructions), "Summarization", options);
}
