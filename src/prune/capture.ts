/**
 * Batch capture (docs/design.md §6 step 1; docs/design.md "Pre-flush Pipeline & Safeguards"): walk the
 * branch's message entries and collect, per assistant message, its answered tool calls that are
 * neither indexed already nor protected; trim what lies behind the frontier; group by
 * `batchingMode`.
 *
 * Counting follows the extension's session scan so frontiers it wrote stay meaningful:
 * `turnIndex` is the 0-based index of the assistant message among all assistant messages on the
 * branch; a batch's `timestamp` is the assistant entry's persistence time (epoch ms).
 */
import type { BatchingMode } from "../config/config.js";
import { applyEdit, buildContextEntries, entryToMessages, latestEdits, textOf, type BranchContext } from "../context/projection.js";
import type { AssistantMessage, ContextEditEntry, SessionEntry, ToolResultMessage } from "../session/types.js";
import type { ToolCallIndexer } from "./indexer.js";
import { occurrenceKey } from "../context/vocabulary.js";
import type { ProtectionTest } from "./protect.js";
import type { FrontierData } from "../entries/types.js";

/** One answered tool call, ready to be indexed. */
export interface CapturedCall {
  toolCallId: string;
  toolName: string;
  args: unknown;
  /** Text blocks of the result joined with "\n" (images dropped). */
  resultText: string;
  isError: boolean;
  resultTimestamp?: number;
  /** Occurrence key `id@resultTimestamp` (bare id without a result timestamp). */
  key: string;
}

export interface Batch {
  turnIndex: number;
  timestamp: number;
  /** Text blocks of the assistant message(s), trimmed. */
  assistantText: string;
  calls: CapturedCall[];
  /** 1-based count of user messages before the batch (agent-message grouping). */
  userTurnGroup: number;
  /**
   * The live flush this batch would have been part of: the number of text-only assistant replies
   * before it (the extension flushes at each final reply).
   */
  flushGroup: number;
}

export interface CaptureResult {
  batches: Batch[];
  /** Answered calls skipped because they are protected. */
  protectedCalls: number;
  /** Calls on the branch that are already indexed or aliased. */
  alreadyIndexed: number;
  /** Calls with no result yet (left for a later run). */
  unanswered: number;
}

/** Text of a tool result as the extension extracts it: text blocks joined with "\n". */
export function resultTextOf(message: Pick<ToolResultMessage, "content">): string {
  return Array.isArray(message.content) ? textOf(message.content) : "";
}

function isTextOnlyAssistant(m: AssistantMessage): boolean {
  return !Array.isArray(m.content) || !m.content.some((b) => b?.type === "toolCall");
}

/** A message entry of the branch as the model sees it (a context edit applied), or omitted by one. */
interface BranchMessage {
  entry: SessionEntry;
  role: string;
  message: unknown;
  omitted: boolean;
}

/**
 * The branch's message entries with the latest context edit applied: a user's edit decides what
 * the model sees, so capture takes the edited message (and nothing of an omitted one), never the
 * original text behind a redaction.
 */
function branchMessagesEdited(branch: SessionEntry[], edits: Map<string, ContextEditEntry>): BranchMessage[] {
  const messages: BranchMessage[] = [];
  for (const entry of branch) {
    if (entry.type !== "message") continue;
    const raw = entry.message as { role?: unknown } | undefined;
    if (!raw || typeof raw.role !== "string") continue;
    const edit = edits.get(entry.id);
    const projected = edit ? applyEdit(entryToMessages(entry), edit) : [raw];
    messages.push({ entry, role: raw.role, message: projected[0] ?? raw, omitted: projected.length === 0 });
  }
  return messages;
}

/** Counts capture reports besides the batches. */
type Tally = Omit<CaptureResult, "batches">;

/**
 * The answered, unindexed, unprotected calls of the assistant message at `i`: its results are the
 * tool results up to the next assistant message, the first per id.
 */
function callsOf(messages: BranchMessage[], i: number, indexer: ToolCallIndexer, isProtected: ProtectionTest, tally: Tally): CapturedCall[] {
  const results = new Map<string, ToolResultMessage>();
  for (let j = i + 1; j < messages.length && messages[j].role !== "assistant"; j++) {
    if (messages[j].role !== "toolResult" || messages[j].omitted) continue;
    const r = messages[j].message as ToolResultMessage;
    if (typeof r.toolCallId === "string" && !results.has(r.toolCallId)) results.set(r.toolCallId, r);
  }
  const assistant = messages[i].message as AssistantMessage;
  const calls: CapturedCall[] = [];
  const seenIds = new Set<string>();
  for (const block of messages[i].omitted || !Array.isArray(assistant.content) ? [] : assistant.content) {
    if (block?.type !== "toolCall" || typeof block.id !== "string" || !block.id) continue;
    if (typeof block.name !== "string") continue; // a call without a tool name cannot be described
    if (seenIds.has(block.id)) continue; // a second call with the same id in one message has no result of its own
    seenIds.add(block.id);
    const result = results.get(block.id);
    if (!result) {
      tally.unanswered++;
      continue;
    }
    const resultTimestamp = typeof result.timestamp === "number" ? result.timestamp : undefined;
    const key = occurrenceKey(block.id, resultTimestamp);
    if (indexer.isSummarized(key)) {
      tally.alreadyIndexed++;
      continue;
    }
    const args = block.arguments ?? {};
    if (isProtected(block.name, args)) {
      tally.protectedCalls++;
      continue;
    }
    calls.push({
      toolCallId: block.id,
      toolName: block.name,
      args,
      resultText: resultTextOf(result),
      isError: result.isError === true,
      ...(resultTimestamp !== undefined ? { resultTimestamp } : {}),
      key,
    });
  }
  return calls;
}

/** The text blocks of an assistant message (unless omitted), joined and trimmed. */
function assistantTextOf(m: BranchMessage): string {
  const content = (m.message as AssistantMessage).content;
  const blocks = m.omitted || !Array.isArray(content) ? [] : content;
  return blocks
    .filter((b) => b?.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("\n")
    .trim();
}

/**
 * Capture batches from a branch (root → leaf).
 *
 * Only assistant messages that are in the model's context (after the latest compaction's kept
 * boundary) yield batches: summarizing what Pi no longer sends would only add context.
 * @param context the branch's projection when the caller has it (else it is computed here)
 */
export function captureBatches(
  branch: SessionEntry[],
  indexer: ToolCallIndexer,
  isProtected: ProtectionTest,
  mode: BatchingMode,
  context?: Pick<BranchContext, "entries" | "edits">,
): CaptureResult {
  const contextEntries = context?.entries ?? buildContextEntries(branch);
  const inContext = new Set(contextEntries);
  const messages = branchMessagesEdited(branch, context?.edits ?? latestEdits(contextEntries));
  const raw: Batch[] = [];
  const tally: Tally = { protectedCalls: 0, alreadyIndexed: 0, unanswered: 0 };
  let turnCounter = 0;
  let userTurnGroup = 0;
  let flushGroup = 0;
  for (let i = 0; i < messages.length; i++) {
    const { entry, role, message } = messages[i];
    if (role === "user") userTurnGroup++;
    if (role !== "assistant") continue;
    const assistant = message as AssistantMessage;
    const turnIndex = turnCounter++;
    if (isTextOnlyAssistant(assistant)) {
      flushGroup++;
      continue;
    }
    const calls = callsOf(messages, i, indexer, isProtected, tally);
    if (calls.length === 0 || !inContext.has(entry)) continue;
    const persisted = Date.parse(entry.timestamp);
    const timestamp = Number.isNaN(persisted) ? (typeof assistant.timestamp === "number" ? assistant.timestamp : 0) : persisted;
    raw.push({ turnIndex, timestamp, assistantText: assistantTextOf(messages[i]), calls, userTurnGroup, flushGroup });
  }
  const trimmed = trimToFrontier(raw, indexer.frontier);
  return { batches: groupByMode(trimmed, mode), ...tally };
}

/**
 * Drop what lies at or behind the frontier (the extension's `trimBatchToPendingRange`): batches of
 * earlier turns go; in the frontier's own turn, calls up to and including the frontier call go.
 */
export function trimToFrontier(batches: Batch[], frontier: FrontierData | null): Batch[] {
  if (!frontier) return batches;
  const out: Batch[] = [];
  for (const batch of batches) {
    if (batch.turnIndex < frontier.lastAttemptedTurnIndex) continue;
    if (batch.turnIndex > frontier.lastAttemptedTurnIndex) {
      out.push(batch);
      continue;
    }
    const at = batch.calls.findIndex((c) => c.toolCallId === frontier.lastAttemptedToolCallId);
    if (at < 0) out.push(batch);
    else if (at < batch.calls.length - 1) out.push({ ...batch, calls: batch.calls.slice(at + 1) });
  }
  return out;
}

/**
 * `turn`: one batch per assistant message. `agent-message`: consecutive batches of one user turn
 * merge; texts joined with a blank line, calls concatenated, turnIndex and timestamp of the last.
 */
export function groupByMode(batches: Batch[], mode: BatchingMode): Batch[] {
  if (mode === "turn") return batches;
  const out: Batch[] = [];
  for (const batch of batches) {
    const last = out[out.length - 1];
    if (last && last.userTurnGroup === batch.userTurnGroup && last.flushGroup === batch.flushGroup) {
      out[out.length - 1] = {
        ...batch,
        assistantText: [last.assistantText, batch.assistantText].filter((t) => t !== "").join("\n\n"),
        calls: [...last.calls, ...batch.calls],
      };
    } else out.push({ ...batch });
  }
  return out;
}
