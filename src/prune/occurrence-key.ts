/**
 * Occurrence identity (seeds/PRUNING.md "Occurrence Identity"): provider tool-call ids are only
 * unique within one response, so one tool call is named by `toolCallId@resultTimestamp`, the
 * timestamp of its ToolResultMessage. A record without a result timestamp is keyed by the bare id.
 */

/** `id@resultTimestamp`, or the bare id when there is no result timestamp. */
export function occurrenceKey(toolCallId: string, resultTimestamp: number | undefined | null): string {
  return typeof resultTimestamp === "number" ? `${toolCallId}@${resultTimestamp}` : toolCallId;
}
