/**
 * Render phase 1, stub-replace (docs/design.md §7; docs/design.md "Stub-replace instead of
 * delete"): a summarized or deduplicated tool result keeps its role, id, tool name and timestamp,
 * gets `isError: false` and a short stub naming its ref. Protected calls (re-checked at render
 * time) and `context_tree_query` results inside the recovery grace window stay verbatim.
 */
import type { ToolCallIndexer } from "../prune/indexer.js";
import { EXTENSION_WORDING, resultKeyOf, spilledStubIn, summarizedStubIn, type StubWording } from "../context/vocabulary.js";
import type { ProtectionTest } from "../prune/protect.js";
import { recoveryGraceKeys } from "../prune/grace.js";
import type { AgentMessage, ToolResultMessage } from "../session/types.js";

/**
 * The key under which a tool result is indexed, or undefined (strict; bare id only for pure-legacy ids).
 * @param key the result's occurrence key ({@link resultKeyOf}), when the caller has it already
 */
export function lookupKeyOf(message: ToolResultMessage, indexer: ToolCallIndexer, key: string = resultKeyOf(message)): string | undefined {
  if (indexer.isSummarized(key)) return key;
  if (indexer.hasLegacyBareRecord(message.toolCallId)) return message.toolCallId;
  return undefined;
}

/**
 * Replace indexed tool results with stubs.
 * @param wording whose stub texts (default the extension's; `run --target pi` plans with stock Pi's)
 * @returns the same array when nothing changed
 */
export function stubReplace(
  messages: AgentMessage[],
  indexer: ToolCallIndexer,
  isProtected: ProtectionTest,
  graceTurns: number,
  wording: StubWording = EXTENSION_WORDING,
): AgentMessage[] {
  const grace = recoveryGraceKeys(messages, graceTurns);
  let out: AgentMessage[] | null = null;
  messages.forEach((m, i) => {
    if (m.role !== "toolResult") return;
    // The occurrence key, made once per result: the index lookup and the grace window both read it.
    const key = resultKeyOf(m);
    const lookup = lookupKeyOf(m, indexer, key);
    if (!lookup) return;
    const record = indexer.getRecord(lookup);
    if (!record || isProtected(record.toolName, record.args)) return;
    if (grace.has(key)) return;
    const ref = indexer.shortRefFor(lookup) ?? m.toolCallId;
    const text = record.spillPath ? spilledStubIn(wording, record, ref) : summarizedStubIn(wording, record, ref);
    const stub: ToolResultMessage = {
      role: "toolResult",
      toolCallId: m.toolCallId,
      toolName: m.toolName,
      content: [{ type: "text", text }],
      isError: false,
      timestamp: m.timestamp,
    };
    out ??= messages.slice();
    out[i] = stub;
  });
  return out ?? messages;
}
