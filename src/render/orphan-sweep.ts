/**
 * Render phase 4, orphan sweep (docs/design.md §7; docs/design.md "Orphan Sweep"): the last,
 * unconditional structural pass. pi-ai repairs a tool call without a result (it inserts a
 * "No result provided" error), but nothing repairs a tool result without an open call, and
 * providers reject that shape — so such results are removed here.
 *
 * One forward pass: an assistant message replaces the set of open call ids with its own tool-call
 * ids; a tool result whose id is open consumes it, any other tool result is removed; every other
 * message (user, custom, bash execution, summaries, system, unknown roles) closes the open set.
 * Tracking is per assistant turn, never cumulative, so an id answered earlier cannot vouch for a
 * later result that reuses it.
 */
import { createHash } from "node:crypto";
import { type PairingRules, walkToolPairs } from "../context/vocabulary.js";
import type { AgentMessage } from "../session/types.js";
import type { RenderDiagnostic } from "./types.js";

export interface SweepResult {
  /** The input array itself when nothing was removed. */
  messages: AgentMessage[];
  /** Tool-call ids of the removed results, in array order. */
  sweptIds: string[];
  /** Indexes (into the input) of the removed results, ascending. */
  sweptAt: number[];
}

/** Remove tool results that no open call answers for. */
export function sweepOrphanToolResults(messages: AgentMessage[]): SweepResult {
  const sweptIds: string[] = [];
  const sweptAt: number[] = [];
  let out: AgentMessage[] | null = null;
  walkToolPairs(messages, SWEEP_PAIRING, {
    assistant: (_i, m) => out?.push(m),
    other: (_i, m) => out?.push(m),
    result: (i, m, call) => {
      if (call) {
        out?.push(m);
        return;
      }
      sweptIds.push(String(m.toolCallId));
      sweptAt.push(i);
      out ??= messages.slice(0, i);
    },
  });
  return { messages: out ?? messages, sweptIds, sweptAt };
}

/** The sweep's pairing: calls of the latest assistant message only, closed by any other message, each answered once. */
const SWEEP_PAIRING: PairingRules = { scope: "turn", between: "close", consume: true };

const LISTED_IDS = 5;

/**
 * The `orphan-sweep` diagnostic of one sweep, deduplicated by a short hash of the sorted swept ids
 * (first 16 hex digits of their SHA-1, joined with ","), so the same orphans found on every render
 * are reported once.
 */
export function orphanSweepDiagnostic(sweptIds: string[]): RenderDiagnostic {
  const sorted = [...sweptIds].sort();
  const dedupKey = createHash("sha1").update(sorted.join(",")).digest("hex").slice(0, 16);
  const listed = sorted.slice(0, LISTED_IDS).join(", ");
  const more = sorted.length > LISTED_IDS ? ` and ${sorted.length - LISTED_IDS} more` : "";
  return {
    kind: "orphan-sweep",
    detail: `removed ${sorted.length} tool result(s) that no open tool call answers for: ${listed}${more}`,
    dedupKey,
  };
}
