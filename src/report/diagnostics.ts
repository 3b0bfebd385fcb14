/**
 * Structural diagnostics of the context Pi would send (docs/design.md §9; docs/design.md
 * "Orphan Sweep", "Diagnostics"): the shapes providers reject or pi-ai has to patch up, each with
 * a count and the first few places (entry id, 1-based line of the session file).
 *
 * They are read off Pi's projection of the branch converted to pi-ai messages, before pruning, so
 * they describe the session itself. Pairing follows pi-ai and the orphan sweep: a tool result
 * belongs to the most recent assistant message; any other message in between (a user message, or
 * anything Pi turns into one) is a barrier.
 */
import { toLlmMessage, type ContextItem } from "../context/projection.js";
import type { RenderDiagnostic } from "../render/types.js";
import { chainBlockIdOf } from "../entries/read.js";
import type { AgentMessage, SessionEntry } from "../session/types.js";

/** Where a finding sits in the session file. */
export interface Place {
  entryId: string;
  /** 1-based line in the file; null when the entry has no line (e.g. synthesized). */
  line: number | null;
  /** What was found there, e.g. the tool-call id. */
  detail: string;
}

export interface Finding {
  count: number;
  /** The first {@link MAX_PLACES} places, in file order of discovery. */
  places: Place[];
}

export const DIAGNOSTIC_KINDS = [
  "orphanResults",
  "unansweredCalls",
  "duplicateIdsInMessage",
  "reusedIds",
  "splitCallResult",
  "unresolvedRanges",
  "images",
] as const;
export type DiagnosticName = (typeof DIAGNOSTIC_KINDS)[number];

/**
 * - `orphanResults`: tool results whose id was not called by the most recent assistant message
 *   (including a second result for an id already answered) — the orphan sweep removes them.
 * - `unansweredCalls`: tool calls with no result before the next assistant message — pi-ai inserts
 *   a synthetic "No result provided" error for each. A call answered only after a barrier is counted
 *   under `splitCallResult` instead.
 * - `duplicateIdsInMessage`: a tool-call id used twice inside one assistant message (each extra use).
 * - `reusedIds`: a tool-call id already used by an earlier assistant message (each later use).
 * - `splitCallResult`: messages that sit between a tool call and its result (each such message once).
 * - `unresolvedRanges`: chain entries the render could not resolve (`unresolved-range`).
 * - `images`: image blocks in the request as sent after pruning — an image of a result the render
 *   stubbed or dropped is no longer sent and is not counted (informational; not a structural fault).
 */
export type Diagnostics = Record<DiagnosticName, Finding>;

/** Kinds that are faults (`--fail-on-diagnostics`); `images` is informational. */
export const FAULT_KINDS: DiagnosticName[] = DIAGNOSTIC_KINDS.filter((k) => k !== "images");

export const MAX_PLACES = 5;

/** Where an entry sits: its 1-based line, or null. */
export type LineOf = (entry: SessionEntry) => number | null;

class Collector {
  count = 0;
  places: Place[] = [];
  add(entry: SessionEntry, lineOf: LineOf, detail: string): void {
    this.count++;
    if (this.places.length < MAX_PLACES) this.places.push({ entryId: entry.id, line: lineOf(entry), detail });
  }
  finding(): Finding {
    return { count: this.count, places: this.places };
  }
}

/**
 * Find the structural diagnostics of a projected branch.
 * @param items Pi's projection of the branch (`projectBranch`), before pruning
 * @param renderDiagnostics diagnostics of the render of the same branch (unresolved chain ranges)
 * @param branch the branch entries (to locate chain entries named by a render diagnostic)
 * @param sent the rendered context before `convertToLlm` (`Rendered.afterAgent`): only the images
 *   of messages it still holds are counted (all of them when omitted)
 */
export function findDiagnostics(
  items: ContextItem[],
  renderDiagnostics: RenderDiagnostic[],
  branch: SessionEntry[],
  lineOf: LineOf,
  sent?: readonly AgentMessage[],
): Diagnostics {
  const found = scanPairs(items, lineOf, sent ? new Set(sent) : undefined);
  const unresolved = new Collector();
  for (const d of renderDiagnostics) {
    if (d.kind !== "unresolved-range") continue;
    const blockId = d.dedupKey.replace(/^overlap:/, "");
    const chainEntry = branch.find((e) => chainBlockIdOf(e) === blockId);
    if (chainEntry) unresolved.add(chainEntry, lineOf, d.detail);
    else {
      unresolved.count++;
      if (unresolved.places.length < MAX_PLACES) unresolved.places.push({ entryId: "", line: null, detail: d.detail });
    }
  }
  return {
    orphanResults: found.orphan.finding(),
    unansweredCalls: found.unanswered.finding(),
    duplicateIdsInMessage: found.duplicate.finding(),
    reusedIds: found.reused.finding(),
    splitCallResult: found.split.finding(),
    unresolvedRanges: unresolved.finding(),
    images: found.images.finding(),
  };
}

/** Walk the converted messages once, pairing results with the calls of the most recent assistant message. */
function scanPairs(items: ContextItem[], lineOf: LineOf, sent: Set<AgentMessage> | undefined) {
  const found = {
    orphan: new Collector(),
    unanswered: new Collector(),
    duplicate: new Collector(),
    reused: new Collector(),
    split: new Collector(),
    images: new Collector(),
  };
  const calledBefore = new Set<string>();
  // The most recent assistant message's calls, and which of them got a result.
  let current: { entry: SessionEntry; calls: string[]; answered: Set<string> } | null = null;
  // Barriers seen since that assistant message; each is counted once, when a result crosses it.
  let barriers: { entry: SessionEntry; counted: boolean; describe: string }[] = [];
  const closeTurn = () => {
    if (current) for (const id of current.calls) if (!current.answered.has(id)) found.unanswered.add(current.entry, lineOf, id);
    current = null;
    barriers = [];
  };
  for (const { message: agentMessage, entry } of items) {
    const message = toLlmMessage(agentMessage);
    if (!message) continue;
    const content = (message as { content?: unknown }).content;
    if (Array.isArray(content) && (!sent || sent.has(agentMessage))) {
      for (const b of content) if (b?.type === "image") found.images.add(entry, lineOf, `${message.role} image ${b.mimeType ?? "?"}`);
    }
    if (message.role === "assistant") {
      closeTurn();
      current = { entry, calls: assistantCalls(content, entry, lineOf, found, calledBefore), answered: new Set() };
    } else if (message.role === "toolResult") {
      const id = message.toolCallId;
      if (!current?.calls.includes(id) || current.answered.has(id)) {
        found.orphan.add(entry, lineOf, current?.answered.has(id) ? `${id} (answered twice)` : id);
        continue;
      }
      current.answered.add(id);
      for (const b of barriers) {
        if (b.counted) continue;
        b.counted = true;
        found.split.add(b.entry, lineOf, `${b.describe} between call ${id} and its result`);
      }
    } else if (current) {
      // Any other message is a barrier between the calls of `current` and later results.
      barriers.push({ entry, counted: false, describe: `${agentMessage.role} message` });
    }
  }
  closeTurn();
  return found;
}

/** The call ids an assistant message opens (first use of each), noting duplicate and reused ids. */
function assistantCalls(
  content: unknown,
  entry: SessionEntry,
  lineOf: LineOf,
  found: { duplicate: Collector; reused: Collector },
  calledBefore: Set<string>,
): string[] {
  const calls: string[] = [];
  const inMessage = new Set<string>();
  for (const b of Array.isArray(content) ? content : []) {
    if (b?.type !== "toolCall" || typeof b.id !== "string") continue;
    if (inMessage.has(b.id)) {
      found.duplicate.add(entry, lineOf, b.id);
      continue;
    }
    inMessage.add(b.id);
    calls.push(b.id);
    if (calledBefore.has(b.id)) found.reused.add(entry, lineOf, b.id);
  }
  for (const id of inMessage) calledBefore.add(id);
  return calls;
}

/** Sum of the fault counts (everything but images). */
export function faultCount(d: Diagnostics): number {
  return FAULT_KINDS.reduce((n, k) => n + d[k].count, 0);
}
