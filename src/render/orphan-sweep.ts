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
import { describeBarrier, type OrphanReason, type PairingRules, walkToolPairs } from "../context/vocabulary.js";
import type { AgentMessage, ToolResultMessage } from "../session/types.js";
import type { RenderDiagnostic } from "./types.js";

/** One removed tool result and why no open call answers for it. */
export interface SweptResult {
  /** Index in the swept input. */
  index: number;
  message: ToolResultMessage;
  why: OrphanReason;
}

export interface SweepResult {
  /** The input array itself when nothing was removed. */
  messages: AgentMessage[];
  /** Tool-call ids of the removed results, in array order. */
  sweptIds: string[];
  /** The removed results, in array order. */
  swept: SweptResult[];
}

/** Remove tool results that no open call answers for. */
export function sweepOrphanToolResults(messages: AgentMessage[]): SweepResult {
  const swept: SweptResult[] = [];
  let out: AgentMessage[] | null = null;
  walkToolPairs(messages, SWEEP_PAIRING, {
    assistant: (_i, m) => out?.push(m),
    other: (_i, m) => out?.push(m),
    result: (i, m, call, why) => {
      if (call) {
        out?.push(m);
        return;
      }
      swept.push({ index: i, message: m, why: why ?? { kind: "uncalled" } });
      out ??= messages.slice(0, i);
    },
  });
  return { messages: out ?? messages, sweptIds: swept.map((s) => String(s.message.toolCallId)), swept };
}

/** The sweep's pairing: calls of the latest assistant message only, closed by any other message, each answered once. */
export const SWEEP_PAIRING: PairingRules = { scope: "turn", between: "close", consume: true };

const LISTED = 5;

/** What happened to one swept result, in words: `read_1 (its call was closed by a custom message "pi-notify" in between)`. */
export function sweptPhrase(toolCallId: string, why: OrphanReason): string {
  switch (why.kind) {
    case "closed":
      return `${toolCallId} (its call was closed by ${describeBarrier(why.by)} in between; pi-ai answers the call with "No result provided")`;
    case "answered":
      return why.calls > 1
        ? `${toolCallId} (a second result for that id, which the assistant message calls ${why.calls} times; the sweep keeps only the first)`
        : `${toolCallId} (a second result for a call already answered in that turn)`;
    default:
      return `${toolCallId} (no call with this id in the assistant message before it)`;
  }
}

/**
 * The `orphan-sweep` diagnostic of one sweep, deduplicated by a short hash of the sorted swept ids
 * (first 16 hex digits of their SHA-1, joined with ","), so the same orphans found on every render
 * are reported once. The detail says, per result (the first five in order), why it was removed.
 */
export function orphanSweepDiagnostic(swept: Pick<SweptResult, "message" | "why">[]): RenderDiagnostic {
  const ids = swept.map((s) => String(s.message.toolCallId));
  const dedupKey = createHash("sha1")
    .update([...ids].sort().join(","))
    .digest("hex")
    .slice(0, 16);
  const listed = swept
    .slice(0, LISTED)
    .map((s) => sweptPhrase(String(s.message.toolCallId), s.why))
    .join("; ");
  const more = swept.length > LISTED ? `; and ${swept.length - LISTED} more` : "";
  return {
    kind: "orphan-sweep",
    detail: `removed ${swept.length} tool result(s) Pi would otherwise send: ${listed}${more}`,
    dedupKey,
  };
}
