/**
 * Positional chain ranges (docs/design.md "Identification model: positional ranges, not ids"):
 * a chain entry names its boundaries by message timestamps, never by ids, and resolves fail-closed.
 */
import type { AgentMessage } from "../session/types.js";

export interface ResolvedRange {
  /** Index of the opening user message. */
  startIndex: number;
  /** Index of the closing assistant message. */
  endIndex: number;
}

/**
 * Resolve a chain to `[startIndex, endIndex]` in `messages`: exactly one `user` message with
 * timestamp `startUserTimestamp` (epoch ms) and exactly one `assistant` message with
 * `finalAssistantTimestamp`, the user one first. Anything else — zero or several matches on
 * either side, a null final timestamp, or the wrong order — is null: the caller drops nothing.
 */
export function resolveRange(messages: AgentMessage[], startUserTimestamp: number, finalAssistantTimestamp: number | null): ResolvedRange | null {
  if (typeof finalAssistantTimestamp !== "number") return null;
  let startIndex = -1;
  let endIndex = -1;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === "user" && m.timestamp === startUserTimestamp) {
      if (startIndex >= 0) return null;
      startIndex = i;
    } else if (m.role === "assistant" && m.timestamp === finalAssistantTimestamp) {
      if (endIndex >= 0) return null;
      endIndex = i;
    }
  }
  if (startIndex < 0 || endIndex < 0 || startIndex >= endIndex) return null;
  return { startIndex, endIndex };
}

/**
 * {@link resolveRange} for many entries over one message list: indexes user and assistant messages
 * by timestamp once, so resolving k entries costs O(n + k) instead of O(n · k). Same rules.
 */
export function rangeResolver(messages: AgentMessage[]): (startUserTimestamp: number, finalAssistantTimestamp: number | null) => ResolvedRange | null {
  const users = new Map<number, number[]>();
  const assistants = new Map<number, number[]>();
  messages.forEach((m, i) => {
    const byTime = m.role === "user" ? users : m.role === "assistant" ? assistants : null;
    if (!byTime) return;
    const list = byTime.get(m.timestamp);
    if (list) list.push(i);
    else byTime.set(m.timestamp, [i]);
  });
  return (start, final) => {
    if (typeof final !== "number") return null;
    const s = users.get(start);
    const e = assistants.get(final);
    if (!s || !e || s.length !== 1 || e.length !== 1 || s[0] >= e[0]) return null;
    return { startIndex: s[0], endIndex: e[0] };
  };
}
