/**
 * The tool results of the context and what becomes of each (docs/design.md "Occurrence
 * Identity", "Orphan Sweep"), read once off Pi's projection as the extension's `context` handler
 * sees it (system messages left out: Pi hides them from the handler, render/context-event.ts):
 * - the call each result answers, paired **in order** inside its turn — the k-th result with an id
 *   answers the k-th call with that id of the assistant message before it, as Pi ran them and as the
 *   provider pairs them (one response may call the same id twice);
 * - whether the orphan sweep removes it, and why (then Pi with the extension never sends it: it must
 *   not be summarized as if the model had seen it, only indexed so that `query` recovers it);
 * - how many results of the context share its occurrence key `id@resultTimestamp` (same id, same
 *   millisecond): such results cannot be told apart by the stub lookup, which is keyed by that string,
 *   so none of them may be indexed under it.
 */
import type { ContextItem } from "../context/projection.js";
import { type OrphanReason, resultKeyOf, toolCallsOf, walkToolPairs } from "../context/vocabulary.js";
import type { AgentMessage, SessionEntry, ToolCall, ToolResultMessage } from "../session/types.js";

/** One tool result of the context. */
export interface ResultOccurrence {
  /** Index in the handler's view of the context (the projection without system messages). */
  index: number;
  message: ToolResultMessage;
  entry: SessionEntry;
  /** Occurrence key `id@resultTimestamp` (bare id without a numeric timestamp). */
  key: string;
  /** 1-based rank among the context's results that share `key`, in context order. */
  ordinal: number;
  /** How many results of the context share `key` (1: it is unique). */
  sharing: number;
  /** The call it answers, paired in order inside its turn; undefined when there is none. */
  call?: ToolCall;
  /** Why the orphan sweep removes it; undefined when it reaches the provider. */
  swept?: OrphanReason;
}

export interface ContextOccurrences {
  /** Every tool result of the context, in order. */
  results: ResultOccurrence[];
  /** The same, by the session entry each came from. */
  byEntry: Map<SessionEntry, ResultOccurrence>;
  /** The results of each occurrence key, in context order. */
  byKey: Map<string, ResultOccurrence[]>;
  /** Occurrence keys that two or more results of the context share. */
  sharedKeys: Set<string>;
}

/** The orphan sweep's pairing (render/orphan-sweep.ts): latest assistant message only, closed by any other message, answered once. */
const SWEEP = { scope: "turn", between: "close", consume: true } as const;

const read = new WeakMap<readonly ContextItem[], ContextOccurrences>();

/**
 * Read the tool results of a projected context (once per items array: the capture, the quick
 * check, the planner and the recovery index of one render share the reading; items are never
 * changed after projection).
 * @param items Pi's projection of the branch (`projectContext(branch).items`)
 * @param base the items of a shorter branch whose reading is shared when `items` is `base` (the
 *   same item objects) followed by no tool result: results pair only with calls before them, so the
 *   messages after the last of them change nothing (a run's summaries after the branch as read)
 */
export function contextOccurrences(items: readonly ContextItem[], base?: readonly ContextItem[]): ContextOccurrences {
  let occurrences = read.get(items);
  if (!occurrences) {
    const known = base ? read.get(base) : undefined;
    occurrences = known && base && extendsWithoutResults(items, base) ? known : readOccurrences(items);
    read.set(items, occurrences);
  }
  return occurrences;
}

/** True when `items` starts with the very items of `base` and holds no tool result after them. */
function extendsWithoutResults(items: readonly ContextItem[], base: readonly ContextItem[]): boolean {
  if (items.length < base.length) return false;
  for (let k = 0; k < base.length; k++) if (items[k] !== base[k]) return false;
  for (let k = base.length; k < items.length; k++) if (items[k].message.role === "toolResult") return false;
  return true;
}

function readOccurrences(items: readonly ContextItem[]): ContextOccurrences {
  const visible = items.filter((i) => i.message.role !== "system");
  const messages = visible.map((i) => i.message);
  const results: ResultOccurrence[] = [];
  const swept = new Map<number, OrphanReason>();
  walkToolPairs(messages, SWEEP, {
    result: (index, _m, call, why) => {
      if (!call) swept.set(index, why ?? { kind: "uncalled" });
    },
  });
  const paired = callsInOrder(messages);
  messages.forEach((m, index) => {
    if (m.role !== "toolResult") return;
    const call = paired.get(index);
    results.push({
      index,
      message: m,
      entry: visible[index].entry,
      key: resultKeyOf(m),
      ordinal: 0,
      sharing: 0,
      ...(call ? { call } : {}),
      ...(swept.has(index) ? { swept: swept.get(index) } : {}),
    });
  });
  const byKey = new Map<string, ResultOccurrence[]>();
  for (const r of results) {
    const list = byKey.get(r.key);
    if (list) list.push(r);
    else byKey.set(r.key, [r]);
  }
  const sharedKeys = new Set<string>();
  for (const [key, list] of byKey) {
    list.forEach((r, i) => {
      r.ordinal = i + 1;
      r.sharing = list.length;
    });
    if (list.length > 1) sharedKeys.add(key);
  }
  return { results, byEntry: new Map(results.map((r) => [r.entry, r])), byKey, sharedKeys };
}

/**
 * The call each tool result of `messages` answers, paired in order inside its turn: the k-th
 * result with an id after an assistant message (up to the next one) answers the k-th call with that
 * id of that message, as Pi ran them; results beyond the calls, or before any assistant message,
 * answer none.
 * @returns by index of the result in `messages`
 */
export function callsInOrder(messages: readonly AgentMessage[]): Map<number, ToolCall> {
  const paired = new Map<number, ToolCall>();
  let queues = new Map<string, ToolCall[]>();
  messages.forEach((m, index) => {
    if (m.role === "assistant") queues = callQueues(m);
    else if (m.role === "toolResult") {
      const call = queues.get(m.toolCallId)?.shift();
      if (call) paired.set(index, call);
    }
  });
  return paired;
}

/** Per call id, the calls of one assistant message with that id, in order (only string ids). */
function callQueues(m: AgentMessage & { role: "assistant" }): Map<string, ToolCall[]> {
  const queues = new Map<string, ToolCall[]>();
  for (const call of toolCallsOf(m)) {
    if (typeof call.id !== "string" || call.id === "") continue;
    const list = queues.get(call.id);
    if (list) list.push(call);
    else queues.set(call.id, [call]);
  }
  return queues;
}

/** Occurrence keys that two or more tool results of `messages` share. */
export function sharedResultKeys(messages: readonly AgentMessage[]): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const m of messages) {
    if (m.role !== "toolResult") continue;
    const key = resultKeyOf(m);
    if (seen.has(key)) shared.add(key);
    else seen.add(key);
  }
  return shared;
}
