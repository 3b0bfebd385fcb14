/**
 * Structural counts of a session: entries by type, messages by role, tool calls and results,
 * sizes of the model-visible context.
 */
import type { Message, Session } from "../session/index.js";

/** Size of a message list: chars of its JSON serialization (the seed's `sizeMessages`) and round(chars / 4). */
export function sizeMessages(messages: unknown[]): { chars: number; tokens: number } {
  const chars = JSON.stringify(messages).length;
  return { chars, tokens: Math.round(chars / 4) };
}

export interface SessionCounts {
  entries: number;
  branchEntries: number;
  entryTypes: Record<string, number>;
  roles: Record<string, number>;
  toolCalls: number;
  toolResults: number;
  contextMessages: number;
  contextChars: number;
  contextTokens: number;
}

/** Count entries (whole file), branch entries, roles and tool calls (branch), and the context size. */
export function countSession(session: Session, context: Message[]): SessionCounts {
  const entryTypes: Record<string, number> = {};
  for (const e of session.entries) entryTypes[e.type] = (entryTypes[e.type] ?? 0) + 1;
  const roles: Record<string, number> = {};
  let toolCalls = 0;
  let toolResults = 0;
  for (const e of session.branch) {
    if (e.type !== "message") continue;
    const m = e.message as { role?: string; content?: unknown };
    const role = String(m?.role);
    roles[role] = (roles[role] ?? 0) + 1;
    if (role === "assistant" && Array.isArray(m.content)) toolCalls += m.content.filter((b) => b?.type === "toolCall").length;
    if (role === "toolResult") toolResults++;
  }
  const size = sizeMessages(context);
  return {
    entries: session.entries.length,
    branchEntries: session.branch.length,
    entryTypes,
    roles,
    toolCalls,
    toolResults,
    contextMessages: context.length,
    contextChars: size.chars,
    contextTokens: size.tokens,
  };
}
