/**
 * How Pi reads an assistant message's usage (Pi 1.6 `calculateContextTokens`, `getAssistantUsage`):
 * the context size a provider reported, and whether Pi trusts it. Used by the metrics, the budget
 * replay and compaction's estimates, which must agree.
 */
import type { AssistantMessage, SessionEntry } from "../session/types.js";

/** `totalTokens || input + output + cacheRead + cacheWrite` (Pi's `calculateContextTokens`). */
export function usageTokens(usage: Partial<Record<"input" | "output" | "cacheRead" | "cacheWrite" | "totalTokens", unknown>>): number {
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return n(usage.totalTokens) || n(usage.input) + n(usage.output) + n(usage.cacheRead) + n(usage.cacheWrite);
}

/**
 * True for an assistant message whose usage Pi trusts: not aborted or errored, and reporting more
 * than zero tokens (Pi's `getAssistantUsage`).
 */
export function hasValidUsage(m: Partial<AssistantMessage>): boolean {
  return m.stopReason !== "aborted" && m.stopReason !== "error" && !!m.usage && usageTokens(m.usage) > 0;
}

/** One request the provider reported on: an assistant message whose usage Pi trusts ({@link hasValidUsage}). */
export interface ReportedRequest {
  entry: SessionEntry;
  message: AssistantMessage;
  /** {@link usageTokens} of its usage. */
  tokens: number;
}

/**
 * Every reported request of a branch, in order: each assistant message (tool-using or not) with
 * usage Pi trusts. The one reading behind every "reported" figure — the last request (`metrics`)
 * and the peak (`budget`, `report`) — so the peak is never below the last.
 */
export function reportedRequests(branch: readonly SessionEntry[]): ReportedRequest[] {
  const out: ReportedRequest[] = [];
  for (const entry of branch) {
    if (entry.type !== "message") continue;
    const message = entry.message as AssistantMessage | undefined;
    if (message?.role === "assistant" && hasValidUsage(message)) out.push({ entry, message, tokens: usageTokens(message.usage) });
  }
  return out;
}

/** The request with the most tokens (the first of equals), or null when none reported. */
export function peakRequest(requests: readonly ReportedRequest[]): ReportedRequest | null {
  let peak: ReportedRequest | null = null;
  for (const r of requests) if (peak === null || r.tokens > peak.tokens) peak = r;
  return peak;
}
