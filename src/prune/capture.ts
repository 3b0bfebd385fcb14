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
import type { BatchingMode, PruneConfig } from "../config/config.js";
import { applyEdit, entryToMessages, projectContext, textOf, type BranchContext } from "../context/projection.js";
import type { AssistantMessage, ContextEditEntry, SessionEntry, ToolCall, ToolResultMessage } from "../session/types.js";
import { type ContextOccurrences, contextOccurrences } from "./occurrences.js";
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
  /** Answered calls whose result the orphan sweep removes (indexed for recovery instead). */
  swept: number;
  /** Answered calls whose occurrence key another result of the context shares (left raw). */
  ambiguous: number;
  /**
   * Failed calls left raw because error purge takes their arguments (at least `minArgChars`): a
   * stub says `isError: false`, so summarizing the result would bring the arguments back.
   */
  keptForErrorPurge: number;
}

/**
 * Text of a tool result: its text blocks joined with "\n" (images left out), as the extension
 * extracts it — or the string itself when `content` is a string (the extension would store "" and
 * lose it; the string is what the tool returned).
 */
export function resultTextOf(message: Pick<ToolResultMessage, "content">): string {
  const content = message.content as unknown;
  if (typeof content === "string") return content;
  return Array.isArray(content) ? textOf(content) : "";
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
 * The result each tool call of the assistant message at `i` got: the tool results up to the next
 * assistant message, paired in order per id (the k-th result with an id answers the k-th call with
 * it, as Pi ran them and as the provider pairs them); calls without one are absent.
 */
function pairInOrder(messages: BranchMessage[], i: number, calls: ToolCall[]): Map<ToolCall, BranchMessage> {
  const waiting = new Map<string, ToolCall[]>();
  for (const call of calls) {
    const list = waiting.get(call.id);
    if (list) list.push(call);
    else waiting.set(call.id, [call]);
  }
  const paired = new Map<ToolCall, BranchMessage>();
  for (let j = i + 1; j < messages.length && messages[j].role !== "assistant"; j++) {
    if (messages[j].role !== "toolResult" || messages[j].omitted) continue;
    const call = waiting.get((messages[j].message as ToolResultMessage).toolCallId)?.shift();
    if (call) paired.set(call, messages[j]);
  }
  return paired;
}

/**
 * The answered, unindexed, unprotected calls of the assistant message at `i`, each with the result
 * it was paired with in order. A result the orphan sweep removes (Pi with the extension never sends
 * it) or whose occurrence key another result of the context shares (a stub could not tell them
 * apart) is never captured: `run` indexes the first kind for recovery after the flush and leaves
 * the second raw.
 */
function callsOf(messages: BranchMessage[], i: number, ctx: CaptureContext, tally: Tally): CapturedCall[] {
  const assistant = messages[i].message as AssistantMessage;
  const blocks = messages[i].omitted || !Array.isArray(assistant.content) ? [] : assistant.content;
  // A call without a tool name cannot be described.
  const named = blocks.filter((b): b is ToolCall => b?.type === "toolCall" && typeof b.id === "string" && b.id !== "" && typeof b.name === "string");
  const paired = pairInOrder(messages, i, named);
  const calls: CapturedCall[] = [];
  for (const block of named) {
    const answer = paired.get(block);
    if (!answer) {
      tally.unanswered++;
      continue;
    }
    const result = answer.message as ToolResultMessage;
    const resultTimestamp = typeof result.timestamp === "number" ? result.timestamp : undefined;
    const key = occurrenceKey(block.id, resultTimestamp);
    const seen = ctx.occurrences.byEntry.get(answer.entry);
    if (seen?.swept) {
      tally.swept++;
      continue;
    }
    if (ctx.occurrences.sharedKeys.has(key)) {
      tally.ambiguous++;
      continue;
    }
    if (ctx.indexer.isSummarized(key)) {
      tally.alreadyIndexed++;
      continue;
    }
    const args = block.arguments ?? {};
    if (ctx.isProtected(block.name, args)) {
      tally.protectedCalls++;
      continue;
    }
    if (result.isError === true && ctx.purge.enabled && (JSON.stringify(args)?.length ?? 0) >= ctx.purge.minArgChars) {
      tally.keptForErrorPurge++;
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

/** What capture reads besides the branch: the index as read, the protection test, the context's tool results, error purge. */
interface CaptureContext {
  indexer: ToolCallIndexer;
  isProtected: ProtectionTest;
  occurrences: ContextOccurrences;
  purge: Pick<PruneConfig["purgeErrors"], "enabled" | "minArgChars">;
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
 * @param purge error purge as configured: failed calls whose arguments it takes stay raw
 */
export function captureBatches(
  branch: SessionEntry[],
  indexer: ToolCallIndexer,
  isProtected: ProtectionTest,
  mode: BatchingMode,
  context?: BranchContext,
  purge: CaptureContext["purge"] = { enabled: false, minArgChars: 0 },
): CaptureResult {
  const projected = context ?? projectContext(branch);
  const inContext = new Set(projected.entries);
  const messages = branchMessagesEdited(branch, projected.edits);
  const ctx: CaptureContext = { indexer, isProtected, occurrences: contextOccurrences(projected.items), purge };
  const raw: Batch[] = [];
  const tally: Tally = { protectedCalls: 0, alreadyIndexed: 0, unanswered: 0, swept: 0, ambiguous: 0, keptForErrorPurge: 0 };
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
    const calls = callsOf(messages, i, ctx, tally);
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
