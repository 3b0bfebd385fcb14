/**
 * CI gates for `condense metrics` (docs/design.md §1, §9): limits on the metrics of each
 * session. A limit is crossed when the value is strictly greater than it; `failOnDiagnostics`
 * is crossed by any structural fault (images are informational and never fail it).
 */
import { FAULT_KINDS } from "./diagnostics.js";
import type { SessionMetrics } from "./session-metrics.js";

export interface GateLimits {
  /** `--max-frontier-gap N`: tokens of unsummarized, unprotected tool results past the frontier. */
  maxFrontierGap?: number;
  /** `--max-chain-share`: percent (0–100; given as `0.8` or `80%`) of the branch held by the largest chain or the open segment. */
  maxChainShare?: number;
  /** `--max-open-thinking N`: thinking tokens after the last text-only reply. */
  maxOpenThinking?: number;
  /** `--max-context N`: estimated tokens of the rendered context after pruning. */
  maxContext?: number;
  /** `--fail-on-diagnostics`: any orphan, unanswered call, duplicate or reused id, split, unresolved range. */
  failOnDiagnostics?: boolean;
}

/** One crossed limit. */
export interface GateCrossing {
  session: string;
  /** Metric name as in the JSON (`frontierGapTokens`, `largestChainSharePct`, `openCycleThinkingTokens`, `context.after.tokens`, `diagnosticFaults`). */
  metric: string;
  /** The flag that set the limit. */
  flag: string;
  value: number;
  limit: number;
  /** For diagnostics: the non-zero kinds with their counts, e.g. `orphanResults 2, reusedIds 1`. */
  detail?: string;
}

/** Every limit the metrics of one session cross, in flag order. */
export function checkGates(m: SessionMetrics, limits: GateLimits): GateCrossing[] {
  const out: GateCrossing[] = [];
  const check = (flag: string, metric: string, value: number, limit: number | undefined) => {
    if (limit !== undefined && value > limit) out.push({ session: m.session, metric, flag, value, limit });
  };
  check("--max-frontier-gap", "frontierGapTokens", m.frontierGapTokens, limits.maxFrontierGap);
  check("--max-chain-share", "largestChainSharePct", m.largestChainSharePct, limits.maxChainShare);
  check("--max-open-thinking", "openCycleThinkingTokens", m.openCycleThinkingTokens, limits.maxOpenThinking);
  check("--max-context", "context.after.tokens", m.context.after.tokens, limits.maxContext);
  if (limits.failOnDiagnostics && m.diagnosticFaults > 0) {
    const detail = FAULT_KINDS.filter((k) => m.diagnostics[k].count > 0)
      .map((k) => `${k} ${m.diagnostics[k].count}`)
      .join(", ");
    out.push({ session: m.session, metric: "diagnosticFaults", flag: "--fail-on-diagnostics", value: m.diagnosticFaults, limit: 0, detail });
  }
  return out;
}

/** One line naming the session, the metric, its value and the limit. */
export function describeCrossing(c: GateCrossing): string {
  if (c.flag === "--fail-on-diagnostics") {
    return `${c.session}: diagnosticFaults = ${c.value} (${c.detail}) exceeds --fail-on-diagnostics 0`;
  }
  const unit = c.metric === "largestChainSharePct" ? "%" : "";
  return `${c.session}: ${c.metric} = ${c.value.toLocaleString("en-US")}${unit} exceeds ${c.flag} ${c.limit.toLocaleString("en-US")}${unit}`;
}
