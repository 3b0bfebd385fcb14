/**
 * How Pi reads an assistant message's usage (Pi 1.6 `calculateContextTokens`, `getAssistantUsage`):
 * the context size a provider reported, and whether Pi trusts it. Used by the metrics, the budget
 * replay and compaction's estimates, which must agree.
 */
import type { AssistantMessage } from "../session/types.js";

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
