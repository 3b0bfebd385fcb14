/**
 * Where compaction cuts (Pi 1.6 `findProjectedCutPoint` in pi-coding-agent
 * `dist/core/compaction/compaction.js`; docs/design.md §10 "Cut point", "Split turns").
 *
 * Walk the projected entries backwards from the newest, adding estimated tokens, until at least
 * `keepRecentTokens` are kept; cut at the first valid cut point at or after that entry (a message
 * that is not a tool result: tool results stay with their call), then move the cut back over
 * adjacent metadata entries. A cut at an assistant message splits its turn: the turn's start (the
 * nearest user-like message before it) is returned too.
 */
import { entryToMessages, type ProjectedEntry } from "../context/projection.js";
import type { AgentMessage } from "../session/types.js";
import { estimateMessageTokens } from "./estimate.js";

export interface CutPoint {
  /** Index in the projected entries of the first entry kept verbatim. */
  firstKeptEntryIndex: number;
  /** Index of the entry that starts the split turn, or -1. */
  turnStartIndex: number;
  /** True when the cut lands inside a turn (at an assistant message after its user message). */
  isSplitTurn: boolean;
}

/** Messages that start a turn: user-like ones (Pi's `isTurnStartMessage`). */
function isTurnStartMessage(message: AgentMessage): boolean {
  switch (message.role) {
    case "user":
    case "bashExecution":
    case "custom":
    case "branchSummary":
    case "compactionSummary":
      return true;
    default:
      return false;
  }
}

/** Messages a cut may land on (Pi's `isCutPointMessage`): user-like and assistant ones — never a tool result, which stays with its call, nor a system message. */
function isCutPointMessage(message: AgentMessage): boolean {
  return message.role === "assistant" || isTurnStartMessage(message);
}

function startsTurn(entry: ProjectedEntry): boolean {
  return entry.sourceEntry.type !== "compaction" && entry.messages.some(isTurnStartMessage);
}

function turnStartBefore(entries: ProjectedEntry[], index: number, start: number): number {
  for (let i = index; i >= start; i--) if (startsTurn(entries[i])) return i;
  return -1;
}

/**
 * Find the cut point among `entries[start, end)` keeping about `keepRecentTokens` (tokens, Pi's
 * estimate). Without any valid cut point the cut is `start`. A suffix made only of an omitted
 * assistant attempt and its omission edits (Pi's overflow recovery) is passed over, so the cut never
 * lands on context that is no longer sent.
 */
export function findCutPoint(entries: ProjectedEntry[], start: number, end: number, keepRecentTokens: number): CutPoint {
  const cutPoints: number[] = [];
  for (let i = start; i < end; i++) {
    if (entries[i].sourceEntry.type !== "compaction" && entries[i].messages.some(isCutPointMessage)) cutPoints.push(i);
  }
  if (cutPoints.length === 0) return { firstKeptEntryIndex: start, turnStartIndex: -1, isSplitTurn: false };

  let accumulated = 0;
  let exceeded = false;
  let cut = cutPoints[0];
  for (let i = end - 1; i >= start; i--) {
    let tokens = 0;
    for (const message of entries[i].messages) tokens += estimateMessageTokens(message);
    if (tokens === 0) continue;
    accumulated += tokens;
    if (accumulated >= keepRecentTokens) {
      exceeded = true;
      cut = cutPoints.find((c) => c >= i) ?? cutPoints[cutPoints.length - 1];
      break;
    }
  }

  // Pi's recovery-omission suffix: everything after the cut is an omitted assistant attempt (a
  // context-visible entry whose latest edit removed it) or invisible metadata.
  const suffix = entries.slice(cut + 1, end);
  const intrinsicallyVisible = (e: ProjectedEntry) => e.sourceEntry.type !== "context_edit" && entryToMessages(e.sourceEntry).length > 0;
  const omitted = (e: ProjectedEntry) => intrinsicallyVisible(e) && e.messages.length === 0;
  const omittedIds = new Set(suffix.filter(omitted).map((e) => e.sourceEntry.id));
  const externalReplacement = suffix.some(
    (e) => e.sourceEntry.type === "context_edit" && e.sourceEntry.replacement !== null && !omittedIds.has(e.sourceEntry.targetId as string),
  );
  const recoverySuffix =
    exceeded &&
    !externalReplacement &&
    suffix.some((e) => e.sourceEntry.type === "message" && (e.sourceEntry.message as AgentMessage)?.role === "assistant" && omitted(e)) &&
    suffix.every((e) => e.sourceEntry.type !== "compaction" && (!intrinsicallyVisible(e) || omitted(e)));
  if (recoverySuffix) cut++;

  while (cut > start) {
    const previous = entries[cut - 1];
    if (previous.sourceEntry.type === "compaction" || previous.messages.length > 0) break;
    cut--;
  }
  const cutStartsTurn = startsTurn(entries[cut]);
  const turnStartIndex = cutStartsTurn ? -1 : turnStartBefore(entries, cut, start);
  return { firstKeptEntryIndex: cut, turnStartIndex, isSplitTurn: !cutStartsTurn && turnStartIndex !== -1 };
}
