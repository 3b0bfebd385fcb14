/**
 * The recovery grace window (docs/design.md "Pruned Data Is Still Available"): an output the agent
 * just recovered with `context_tree_query` stays verbatim for `recoveryGraceTurns` user turns, so
 * the model can read it before it is pruned again. Read by stub-replace (the result is not stubbed)
 * and by chain compression (a chain holding such a result waits).
 */
import { resultKeyOf } from "../context/vocabulary.js";
import type { AgentMessage } from "../session/types.js";

/** The extension's recovery tool. */
export const QUERY_TOOL = "context_tree_query";

/**
 * Occurrence keys of `context_tree_query` results still inside the recovery grace window: fewer
 * than `graceTurns` + 1 user messages have arrived since (counting only role `user`).
 */
export function recoveryGraceKeys(messages: AgentMessage[], graceTurns: number): Set<string> {
  const keys = new Set<string>();
  if (graceTurns <= 0) return keys;
  const total = messages.reduce((n, m) => n + (m.role === "user" ? 1 : 0), 0);
  let seen = 0;
  for (const m of messages) {
    if (m.role === "user") seen++;
    else if (m.role === "toolResult" && m.toolName === QUERY_TOOL && total - seen <= graceTurns) {
      keys.add(resultKeyOf(m));
    }
  }
  return keys;
}
