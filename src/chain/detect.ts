/**
 * Chain detection (docs/design.md "What a closed chain is"): a user message opens a chain; tool
 * turns follow; a text-only assistant reply closes it. A user message arriving while a chain is
 * open ends it as interrupted. The segment still open at the end is not a chain.
 */
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../session/types.js";
import { isCompressedChainMessage, resultKeyOf } from "../context/vocabulary.js";
import type { ProtectionTest } from "../prune/protect.js";

export interface ChainRange {
  /** `timestamp` (epoch ms) of the opening user message. */
  startUserTimestamp: number;
  /** `timestamp` of the closing text-only assistant message; null for an interrupted chain. */
  finalAssistantTimestamp: number | null;
  /** Bare ids of the middle tool calls and results, first seen first. */
  middleToolCallIds: string[];
  /** Occurrence keys of the middle tool results. */
  middleOccurrenceKeys: string[];
  /** Middle ids that are protected. */
  protectedToolCallIds: string[];
  /** Index of the opening user message and of the closing assistant (or last message) in the input. */
  startIndex: number;
  endIndex: number;
}

function hasToolCalls(m: AssistantMessage): boolean {
  return Array.isArray(m.content) && m.content.some((b) => b?.type === "toolCall");
}

/**
 * Closed and interrupted chains of a message list, in order.
 * @param messages branch messages (custom and other roles are ignored)
 */
export function detectChains(messages: AgentMessage[], isProtected: ProtectionTest): ChainRange[] {
  const chains: ChainRange[] = [];
  let open: (ChainRange & { ids: Set<string>; keys: Set<string>; prot: Set<string> }) | null = null;
  const emit = (final: number | null, endIndex: number) => {
    if (!open) return;
    chains.push({
      startUserTimestamp: open.startUserTimestamp,
      finalAssistantTimestamp: final,
      middleToolCallIds: [...open.ids],
      middleOccurrenceKeys: [...open.keys],
      protectedToolCallIds: [...open.prot],
      startIndex: open.startIndex,
      endIndex,
    });
    open = null;
  };
  messages.forEach((m, i) => {
    if (m.role === "user") {
      if (isCompressedChainMessage(m)) return;
      if (open) emit(null, i - 1);
      open = {
        startUserTimestamp: m.timestamp,
        finalAssistantTimestamp: null,
        middleToolCallIds: [],
        middleOccurrenceKeys: [],
        protectedToolCallIds: [],
        startIndex: i,
        endIndex: i,
        ids: new Set(),
        keys: new Set(),
        prot: new Set(),
      };
      return;
    }
    if (!open) return;
    const chain = open as NonNullable<typeof open>;
    if (m.role === "assistant") {
      if (!hasToolCalls(m)) {
        emit(m.timestamp, i);
        return;
      }
      for (const b of m.content) {
        if (b?.type !== "toolCall" || !b.id || !b.name) continue;
        chain.ids.add(b.id);
        if (isProtected(b.name, b.arguments)) chain.prot.add(b.id);
      }
    } else if (m.role === "toolResult") {
      const r = m as ToolResultMessage;
      if (!r.toolCallId) return;
      chain.ids.add(r.toolCallId);
      chain.keys.add(resultKeyOf(r));
      if (isProtected(r.toolName, undefined)) chain.prot.add(r.toolCallId);
    }
  });
  return chains;
}

/** Index of the first message after the last text-only assistant reply (0 when there is none). */
export function openSegmentStart(messages: AgentMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "assistant" && !hasToolCalls(m)) return i + 1;
  }
  return 0;
}
