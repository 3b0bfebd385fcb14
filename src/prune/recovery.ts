/**
 * Recovery of what the render removes (docs/design.md "Pruned Data Is Still Available", "Orphan
 * Sweep", "Occurrence Identity"): every tool result of the context that Pi with the extension does
 * not send — neither the result nor its stub survives the render, nor is its text relocated into a
 * compressed-chain block — must stay recoverable by `query`. Those no record recovers yet get a
 * back-filled record with a short ref (prune/backfill.ts); nothing is summarized for them, since
 * the model never saw them.
 *
 * A recovery record must not change the render. It is keyed by the result's own occurrence key
 * `id@resultTimestamp` when that is safe; otherwise by `id#n@resultTimestamp`, `n` the result's
 * rank among the context's results with that key — a key no message carries, so no stub ever
 * points at it. Unsafe means: another result of the context shares the key (a record under it would
 * stub them all), the key is indexed already for another output, the result has no numeric
 * timestamp (a bare-id record would be taken for a legacy one and stub every result with that id),
 * or the result failed (its stub says `isError: false`, which would hide the failure from error
 * purge and keep a failed call's arguments in the context).
 */
import { textOf } from "../context/projection.js";
import { compressedChainId, firstUserText, occurrenceKey } from "../context/vocabulary.js";
import type { ToolCallRecord } from "../entries/types.js";
import type { AgentMessage } from "../session/types.js";
import { resultTextOf } from "./capture.js";
import { contentHash } from "./content-hash.js";
import type { ToolCallIndexer } from "./indexer.js";
import type { ContextOccurrences, ResultOccurrence } from "./occurrences.js";

/**
 * The context's tool results the render does not send.
 * @param occurrences the tool results of the context (indices into the handler's view)
 * @param stubbed the stub-replace phase's output (aligned with the handler's view)
 * @param sent the render's final messages (before system messages are put back)
 */
export function droppedResults(occurrences: ContextOccurrences, stubbed: readonly AgentMessage[], sent: readonly AgentMessage[]): ResultOccurrence[] {
  const survivors = new Set<AgentMessage>(sent);
  const blocks = sent.filter((m) => compressedChainId(firstUserText(m)?.trimStart() ?? "") !== undefined).map((m) => firstUserText(m) ?? "");
  return occurrences.results.filter((r) => {
    if (survivors.has(r.message) || survivors.has(stubbed[r.index])) return false;
    // A protected output inside a compressed chain is relocated into the block, verbatim.
    const relocated = `>\n${textOf(r.message.content)}\n</protected-output>`;
    return !blocks.some((text) => text.includes(relocated));
  });
}

/** The tool-call id a recovery record of `r` is stored under: its own, or `id#n` when that is unsafe (see the module comment). */
export function recoveryToolCallId(r: ResultOccurrence, indexer: Pick<ToolCallIndexer, "isSummarized">): string {
  const id = r.message.toolCallId;
  const safe = r.sharing === 1 && typeof r.message.timestamp === "number" && r.message.isError !== true && !indexer.isSummarized(r.key);
  return safe ? id : `${id}#${r.ordinal}`;
}

/** True when a record under one of the keys `r` may be stored under holds `r`'s output (same content hash). */
export function isRecoverable(r: ResultOccurrence, indexer: Pick<ToolCallIndexer, "getRecord">): boolean {
  const timestamp = typeof r.message.timestamp === "number" ? r.message.timestamp : undefined;
  const keys = [occurrenceKey(`${r.message.toolCallId}#${r.ordinal}`, timestamp)];
  if (r.sharing === 1) keys.unshift(r.key);
  const text = resultTextOf(r.message);
  return keys.some((key) => {
    const record = indexer.getRecord(key);
    return !!record && (record.contentHash ?? contentHash(record.toolName, record.resultText)) === contentHash(record.toolName, text);
  });
}

/**
 * Records for the dropped results no record recovers yet, in context order: tool name and
 * arguments from the call each answers (paired in order in its turn; the result's own tool name
 * and no arguments when it answers none), the full text, `turnIndex` -1 and `timestamp` the
 * result's own, as chain back-fills have (there is no batch).
 */
export function recoveryRecords(
  dropped: ResultOccurrence[],
  indexer: Pick<ToolCallIndexer, "getRecord" | "isSummarized">,
): { result: ResultOccurrence; record: ToolCallRecord }[] {
  const out: { result: ResultOccurrence; record: ToolCallRecord }[] = [];
  for (const r of dropped) {
    if (isRecoverable(r, indexer)) continue;
    const m = r.message;
    const resultTimestamp = typeof m.timestamp === "number" ? m.timestamp : undefined;
    const record: ToolCallRecord = {
      toolCallId: recoveryToolCallId(r, indexer),
      toolName: typeof r.call?.name === "string" ? r.call.name : String(m.toolName ?? ""),
      args: r.call ? (r.call.arguments ?? {}) : {},
      resultText: resultTextOf(m),
      isError: m.isError === true,
      turnIndex: -1,
      timestamp: resultTimestamp ?? 0,
      ...(resultTimestamp !== undefined ? { resultTimestamp } : {}),
    };
    out.push({ result: r, record });
  }
  return out;
}
