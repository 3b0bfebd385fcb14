/**
 * Facts about a session that `condense report` shows beside the figures other commands print
 * (docs/json-schemas.md, `condense.report/1`): what its requests cost as the provider reported it,
 * where the model changed and where a compaction was recorded (placed on the tool-using turns of
 * the budget replay), and the largest tool outputs in Pi's context (measured as every command
 * measures the context, `context/size.ts`) with the ref that recovers them.
 */
import type { ContextItem } from "../context/projection.js";
import { messageChars, messageTokens } from "../context/size.js";
import { resultKeyOf } from "../context/vocabulary.js";
import { isMessageEntry, type AssistantMessage, type CompactionEntry, type SessionEntry, type ToolResultMessage } from "../session/types.js";
import { keyArgument } from "../summarize/deterministic.js";

/** What the provider reported over every assistant message of the file (all branches: each was a paid request). */
export interface SessionUsage {
  /** Assistant messages that carry usage. */
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** `usage.cost.total` summed (USD, as recorded; 0 when the provider recorded none). */
  cost: number;
}

/** A place on the branch, with the tool-using turn (budget `turn`) at or after it; null when no such turn follows. */
export interface TurnMarker {
  entryId: string;
  line: number | null;
  turn: number | null;
}

export interface CompactionMarker extends TurnMarker {
  tokensBefore: number | null;
  firstKeptEntryId: string | null;
}

export interface ModelSwitchMarker extends TurnMarker {
  /** `provider/id` of the previous assistant message, and of this one. */
  from: string;
  to: string;
}

/** One tool result in Pi's context, largest first. */
export interface LargestOutput {
  entryId: string;
  line: number | null;
  toolCallId: string;
  /** Occurrence key `toolCallId@resultTimestamp`. */
  key: string;
  toolName: string;
  /** What the call did: its path, command, pattern, query or URL (the deterministic summary's key argument). */
  argument: string | null;
  isError: boolean;
  /** Characters of the result in the one context measure (`context/size.ts`: its text, an image 4800). */
  chars: number;
  /** `ceil(chars / 4)`. */
  tokens: number;
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Usage and cost summed over every assistant message of the file. */
export function sessionUsage(entries: SessionEntry[]): SessionUsage {
  const total: SessionUsage = { requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
  for (const e of entries) {
    if (!isMessageEntry(e) || e.message.role !== "assistant") continue;
    const u = (e.message as AssistantMessage).usage as Partial<AssistantMessage["usage"]> | undefined;
    if (!u || typeof u !== "object") continue;
    total.requests++;
    total.input += num(u.input);
    total.output += num(u.output);
    total.cacheRead += num(u.cacheRead);
    total.cacheWrite += num(u.cacheWrite);
    total.cost += num(u.cost?.total);
  }
  return total;
}

/**
 * A function giving, for a branch index, the first tool-using turn at or after it.
 * @param turns budget rows: the assistant entry of each tool-using turn and its 1-based `turn`
 */
export function turnLocator(branch: SessionEntry[], turns: { entryId: string; turn: number }[]): (index: number) => number | null {
  const indexOf = new Map(branch.map((e, i) => [e.id, i]));
  const placed = turns.map((t) => ({ at: indexOf.get(t.entryId) ?? -1, turn: t.turn })).filter((t) => t.at >= 0);
  return (index) => placed.find((t) => t.at >= index)?.turn ?? null;
}

/** The compaction entries of the branch. */
export function compactionMarkers(
  branch: SessionEntry[],
  turnAt: (index: number) => number | null,
  lineOf: (e: SessionEntry) => number | null,
): CompactionMarker[] {
  const out: CompactionMarker[] = [];
  branch.forEach((e, i) => {
    if (e.type !== "compaction") return;
    const c = e as CompactionEntry;
    out.push({
      entryId: e.id,
      line: lineOf(e),
      turn: turnAt(i),
      tokensBefore: typeof c.tokensBefore === "number" ? c.tokensBefore : null,
      firstKeptEntryId: typeof c.firstKeptEntryId === "string" ? c.firstKeptEntryId : null,
    });
  });
  return out;
}

/** Assistant messages of the branch answered by another model than the assistant message before them. */
export function modelSwitches(
  branch: SessionEntry[],
  turnAt: (index: number) => number | null,
  lineOf: (e: SessionEntry) => number | null,
): ModelSwitchMarker[] {
  const out: ModelSwitchMarker[] = [];
  let previous: string | null = null;
  branch.forEach((e, i) => {
    if (!isMessageEntry(e) || e.message.role !== "assistant") return;
    const m = e.message as AssistantMessage;
    if (!m.provider && !m.model) return;
    const model = `${m.provider ?? "?"}/${m.model ?? "?"}`;
    if (previous !== null && model !== previous) out.push({ entryId: e.id, line: lineOf(e), turn: turnAt(i), from: previous, to: model });
    previous = model;
  });
  return out;
}

/**
 * The `top` largest tool results of the context (Pi's projection), largest first (ties in context
 * order), each with the arguments of the call that the nearest assistant message before it made.
 */
export function largestOutputs(items: ContextItem[], top: number, lineOf: (e: SessionEntry) => number | null): LargestOutput[] {
  const calls = new Map<string, unknown>();
  const found: LargestOutput[] = [];
  for (const { message, entry } of items) {
    if (message.role === "assistant" && Array.isArray(message.content)) {
      for (const b of message.content) if (b?.type === "toolCall") calls.set(b.id, b.arguments);
      continue;
    }
    if (message.role !== "toolResult") continue;
    const r = message as ToolResultMessage;
    found.push({
      entryId: entry.id,
      line: lineOf(entry),
      toolCallId: r.toolCallId,
      key: resultKeyOf(r),
      toolName: r.toolName,
      argument: keyArgument(calls.get(r.toolCallId)) ?? null,
      isError: !!r.isError,
      chars: messageChars(r),
      tokens: messageTokens(r),
    });
  }
  return found
    .map((o, i) => ({ o, i }))
    .sort((a, b) => b.o.chars - a.o.chars || a.i - b.i)
    .slice(0, Math.max(0, top))
    .map(({ o }) => o);
}
