/**
 * Render phase 1, stub-replace (SPEC.md section 7; seeds/PRUNING.md "Stub-replace instead of
 * delete"): a summarized or deduplicated tool result keeps its role, id, tool name and timestamp,
 * gets `isError: false` and a short stub naming its ref. Protected calls (re-checked at render
 * time) and `context_tree_query` results inside the recovery grace window stay verbatim.
 */
import type { ToolCallIndexer } from "../prune/indexer.js";
import { occurrenceKey } from "../prune/occurrence-key.js";
import type { ProtectionTest } from "../prune/protect.js";
import { recoveryGraceKeys } from "../prune/grace.js";
import type { ToolCallRecord } from "../entries/types.js";
import type { AgentMessage, ToolResultMessage } from "../session/types.js";

/** ``[Summarized in pruner summary, ref `tN`. Use context_tree_query to retrieve full output.]`` */
export function summarizedStub(ref: string): string {
  return `[Summarized in pruner summary, ref \`${ref}\`. Use context_tree_query to retrieve full output.]`;
}

/** The stub of a spilled output: tool, size in bytes, head preview, sidecar path and ref. */
export function spilledStub(record: ToolCallRecord, ref: string): string {
  return (
    `[Spilled: ${record.toolName} (${record.spillBytes ?? "?"} bytes). Head preview:\n` +
    `${record.resultPreview ?? ""}\n` +
    `Full output: ${record.spillPath}. Use context_tree_query(${ref}) to retrieve.]`
  );
}

/** The key under which a tool result is indexed, or undefined (strict; bare id only for pure-legacy ids). */
export function lookupKeyOf(message: ToolResultMessage, indexer: ToolCallIndexer): string | undefined {
  const key = occurrenceKey(message.toolCallId, typeof message.timestamp === "number" ? message.timestamp : undefined);
  if (indexer.isSummarized(key)) return key;
  if (indexer.hasLegacyBareRecord(message.toolCallId)) return message.toolCallId;
  return undefined;
}

/**
 * Replace indexed tool results with stubs.
 * @returns the same array when nothing changed
 */
export function stubReplace(
  messages: AgentMessage[],
  indexer: ToolCallIndexer,
  isProtected: ProtectionTest,
  graceTurns: number,
): AgentMessage[] {
  const grace = recoveryGraceKeys(messages, graceTurns);
  let out: AgentMessage[] | null = null;
  messages.forEach((m, i) => {
    if (m.role !== "toolResult") return;
    const lookup = lookupKeyOf(m, indexer);
    if (!lookup) return;
    const record = indexer.getRecord(lookup);
    if (!record || isProtected(record.toolName, record.args)) return;
    if (grace.has(occurrenceKey(m.toolCallId, typeof m.timestamp === "number" ? m.timestamp : undefined))) return;
    const ref = indexer.shortRefFor(lookup) ?? m.toolCallId;
    const text = record.spillPath ? spilledStub(record, ref) : summarizedStub(ref);
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
