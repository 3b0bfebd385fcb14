/**
 * CI gates for `condense metrics` (docs/design.md §1, §9): limits on the metrics of each
 * session. A limit is crossed when the value is strictly greater than it; `failOnDiagnostics`
 * is crossed by any structural fault (images are informational and never fail it). Each gate
 * tests the figure the table prints: `--max-context` the context the user's Pi sends after
 * `run` (`context/size.ts` `sentContext`: stock Pi's unless the extension is installed and on).
 */
import { sentContext } from "../context/size.js";
import { FAULT_KINDS } from "./diagnostics.js";
import type { SessionMetrics } from "./session-metrics.js";

export interface GateLimits {
  /** `--max-frontier-gap N`: tokens of unsummarized, unprotected tool results past the frontier. */
  maxFrontierGap?: number;
  /** `--max-chain-share`: percent (0–100; given as `0.8` or `80%`) of the branch held by the largest chain or the open segment. */
  maxChainShare?: number;
  /** `--max-open-thinking N`: thinking tokens after the last text-only reply. */
  maxOpenThinking?: number;
  /** `--max-context N`: estimated tokens of the context the user's Pi sends after `run` (stock Pi's, or the extension's when it is installed and on). */
  maxContext?: number;
  /** `--fail-on-diagnostics`: any orphan, unanswered call, duplicate or reused id, split, unresolved range. */
  failOnDiagnostics?: boolean;
}

/** One crossed limit. */
export interface GateCrossing {
  session: string;
  /**
   * Metric name as in the JSON (`frontierGapTokens`, `largestChainSharePct`, `openCycleThinkingTokens`,
   * `context.piOnly.after.tokens` for stock Pi or `context.after.tokens` for Pi with the extension, `diagnosticFaults`).
   */
  metric: string;
  /** For `--max-context`: whose context the value is, `stock Pi` or `Pi with pi-condense`. */
  pi?: string;
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
  const check = (flag: string, metric: string, value: number, limit: number | undefined, pi?: string) => {
    if (limit !== undefined && value > limit) out.push({ session: m.session, metric, flag, value, limit, ...(pi ? { pi } : {}) });
  };
  check("--max-frontier-gap", "frontierGapTokens", m.frontierGapTokens, limits.maxFrontierGap);
  check("--max-chain-share", "largestChainSharePct", m.largestChainSharePct, limits.maxChainShare);
  check("--max-open-thinking", "openCycleThinkingTokens", m.openCycleThinkingTokens, limits.maxOpenThinking);
  const stock = m.target.used === "pi";
  check(
    "--max-context",
    stock ? "context.piOnly.after.tokens" : "context.after.tokens",
    sentContext(m.context, m.target).after.tokens,
    limits.maxContext,
    stock ? "stock Pi" : "Pi with pi-condense",
  );
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
  const whose = c.pi ? ` (what ${c.pi} sends after \`condense run\`)` : "";
  return `${c.session}: ${c.metric} = ${c.value.toLocaleString("en-US")}${unit}${whose} exceeds ${c.flag} ${c.limit.toLocaleString("en-US")}${unit}`;
}
