/**
 * Render phase 3, chain-range prune (docs/design.md §7; docs/design.md "Chain Compression",
 * "Identification model: positional ranges, not ids", "Synthetic message format", "Protected-output relocation"): each
 * `context-prune-chain` entry resolves fail-closed to one user message and one assistant message;
 * between them the assistant turns, tool results and per-batch summaries go, one
 * `<compressed-chain>` user message goes in after the start, and the kept final reply loses its
 * thinking. Per-batch summaries elsewhere are suppressed when they cover a dropped call.
 */
import { summaryLookup } from "../chain/compress.js";
import { rangeResolver } from "../chain/resolve.js";
import { textOf } from "../context/projection.js";
import {
  chainBodyIn,
  compressedChainId,
  compressedChainText,
  EXTENSION_WORDING,
  firstUserText,
  recordKeyOf,
  recoveryNeedsFull,
  resultKeyOf,
} from "../context/vocabulary.js";
import { readSummaryRefs } from "../entries/read.js";
import { CUSTOM_TYPES, type ChainEntryData } from "../entries/types.js";
import type { AgentMessage, AssistantMessage, CustomMessage, UserMessage } from "../session/types.js";
import type { PruneContext, RenderDiagnostic } from "./types.js";

function isPerBatchSummary(m: AgentMessage): m is CustomMessage {
  return m.role === "custom" && m.customType === CUSTOM_TYPES.summary;
}

interface Accepted {
  entry: ChainEntryData;
  startIndex: number;
  endIndex: number;
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

type Report = (d: RenderDiagnostic) => void;

/**
 * The chain entries that resolve, in message order, without overlap: an entry that does not
 * resolve, or whose range starts where an accepted one starts or nests inside it, is reported
 * (`unresolved-range`) and skipped — unless its start or final message is behind Pi's latest
 * compaction (`ctx.behindCompaction`): then it is skipped silently.
 */
function acceptRanges(messages: AgentMessage[], ctx: PruneContext, report: Report): Accepted[] {
  const entries = [...ctx.indexer.chains.values()].sort((a, b) => a.startUserTimestamp - b.startUserTimestamp);
  const resolved: Accepted[] = [];
  const resolveRange = rangeResolver(messages);
  for (const entry of entries) {
    const range = resolveRange(entry.startUserTimestamp, entry.finalAssistantTimestamp);
    if (!range) {
      // A range a compaction took (in part) out of the context: Pi sends none of it raw, nothing to report.
      const behind = ctx.behindCompaction;
      if (behind?.has(entry.startUserTimestamp) || (entry.finalAssistantTimestamp !== null && behind?.has(entry.finalAssistantTimestamp))) continue;
      report({
        kind: "unresolved-range",
        dedupKey: entry.blockId,
        detail: `blockId=${entry.blockId} start=${entry.startUserTimestamp} final=${entry.finalAssistantTimestamp}: not exactly one user and one later assistant message at these timestamps; nothing dropped`,
      });
      continue;
    }
    resolved.push({ entry, ...range });
  }
  resolved.sort((a, b) => a.startIndex - b.startIndex || b.endIndex - a.endIndex);
  const accepted: Accepted[] = [];
  for (const r of resolved) {
    // Sorted by start and never overlapping, so only the last accepted range can clash with r.
    const last = accepted[accepted.length - 1];
    const same = last && last.startIndex === r.startIndex ? last : undefined;
    const outer = last && last.startIndex < r.startIndex && r.startIndex < last.endIndex ? last : undefined;
    const clash = same ?? outer;
    if (clash) {
      report({
        kind: "unresolved-range",
        dedupKey: `overlap:${r.entry.blockId}`,
        detail: same
          ? `blockId=${r.entry.blockId} skipped: starts at the message blockId=${clash.entry.blockId} already starts at`
          : `blockId=${r.entry.blockId} skipped: its range nests inside blockId=${clash.entry.blockId}`,
      });
      continue;
    }
    accepted.push(r);
  }
  return accepted;
}

/** What the accepted ranges do to the message list. */
interface Edits {
  drop: Set<number>;
  droppedIds: Set<string>;
  droppedKeys: Set<string>;
  insertAfter: Map<number, UserMessage>;
  stripAt: Set<number>;
  /** Texts of the protected outputs moved into the blocks inserted. */
  relocated: Set<string>;
}

/** The body of a chain block: its range summary, else the per-batch summaries covering its dropped calls. */
function chainBody(entry: ChainEntryData, covering: () => ReturnType<typeof summaryLookup>): string {
  if (typeof entry.rangeSummaryText === "string" && entry.rangeSummaryText !== "") return entry.rangeSummaryText;
  const keys = Array.isArray(entry.droppedOccurrenceKeys) && entry.droppedOccurrenceKeys.length > 0 ? entry.droppedOccurrenceKeys : undefined;
  return covering()(keys ?? entry.droppedToolCallIds ?? [], keys === undefined).join("\n\n");
}

/**
 * One accepted range: drop its assistant turns, tool results and per-batch summaries, insert the
 * block after its start (unless a second application finds it there), strip the final reply's
 * thinking (unless it is the last assistant message), and report ids that drifted.
 */
function editRange(
  messages: AgentMessage[],
  r: Accepted,
  c: { edits: Edits; present: Set<string>; lastAssistant: number; ctx: PruneContext; report: Report; covering: () => ReturnType<typeof summaryLookup> },
): void {
  const { entry, startIndex, endIndex } = r;
  const { drop, droppedIds, droppedKeys } = c.edits;
  const applied = c.present.has(entry.blockId);
  const protectedIds = new Set(entry.protectedToolCallIds ?? []);
  const relocated: { tool: string; text: string }[] = [];
  const inRange = new Set<string>();
  for (let i = startIndex + 1; i < endIndex; i++) {
    const m = messages[i];
    if (m.role === "assistant") {
      for (const b of (m as AssistantMessage).content ?? []) if (b?.type === "toolCall" && b.id) inRange.add(b.id);
      drop.add(i);
    } else if (m.role === "toolResult") {
      inRange.add(m.toolCallId);
      droppedIds.add(m.toolCallId);
      droppedKeys.add(resultKeyOf(m));
      if (protectedIds.has(m.toolCallId)) relocated.push({ tool: m.toolName, text: textOf(m.content) });
      drop.add(i);
    } else if (isPerBatchSummary(m)) drop.add(i);
  }
  for (const id of inRange) droppedIds.add(id);
  const recorded = new Set(entry.droppedToolCallIds ?? []);
  if (!(applied && inRange.size === 0) && !sameSet(recorded, inRange)) {
    c.report({ kind: "range-id-mismatch", dedupKey: entry.blockId, detail: `blockId=${entry.blockId} recorded=${recorded.size} actual=${inRange.size}` });
  }
  if (!applied) {
    for (const r of relocated) c.edits.relocated.add(r.text);
    const refs = entry.toolRefs ?? [];
    const wording = c.ctx.wording ?? EXTENSION_WORDING;
    // `--full` is part of stock Pi's recovery hint only: the extension's wording never reads it.
    const full = wording.target === "pi" && refs.length > 0 && refs.some((ref) => refNeedsFull(c.ctx, ref));
    const body = chainBodyIn(wording, chainBody(entry, c.covering), refs, full);
    const text = compressedChainText(entry, body, relocated);
    c.edits.insertAfter.set(startIndex, { role: "user", content: [{ type: "text", text }], timestamp: entry.compressedAt });
  }
  if (c.ctx.config.chainCompression.stripFinalAssistantThinking && endIndex !== c.lastAssistant) {
    const final = messages[endIndex] as AssistantMessage;
    const blocks = Array.isArray(final.content) ? final.content : [];
    if (blocks.some((b) => b?.type === "thinking") && blocks.some((b) => b?.type !== "thinking")) c.edits.stripAt.add(endIndex);
  }
}

/** True when the output behind a chain's ref takes `condense query --full` to recover whole. */
function refNeedsFull(ctx: PruneContext, ref: string): boolean {
  const record = ctx.indexer.getRecord(ctx.indexer.shortRefToKey.get(ref) ?? ref);
  return record !== undefined && recoveryNeedsFull(record);
}

/** Coverage-based suppression: a per-batch summary anywhere whose refs name a dropped call. */
function dropCoveringSummaries(messages: AgentMessage[], edits: Edits): void {
  // Each ref is one Set lookup (its occurrence key, or its bare id); summaries are few, so the
  // role test comes before the lookup in `drop`.
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isPerBatchSummary(m) || edits.drop.has(i)) continue;
    const covers = readSummaryRefs(m.details).some((r) =>
      typeof r.resultTimestamp === "number" ? edits.droppedKeys.has(recordKeyOf(r)) : edits.droppedIds.has(r.toolCallId),
    );
    if (covers) edits.drop.add(i);
  }
}

/** The output of {@link applyChainCompressions} with where each message came from. */
export interface ChainPruneResult {
  /** The input array itself when nothing changed. */
  messages: AgentMessage[];
  /** Per output message: the index of the input message it is (or was stripped from), or null for an inserted block. */
  origins: (number | null)[];
}

/**
 * Apply every chain entry of the index to `messages` (the output of the earlier phases).
 * Diagnostics found are pushed onto `diagnostics` (once per kind and key); the texts of the
 * protected outputs moved into the inserted blocks are added to `relocated` when given.
 * @returns the same array when nothing changed (also on a second application of the same entries)
 */
export function applyChainCompressions(messages: AgentMessage[], ctx: PruneContext, diagnostics: RenderDiagnostic[], relocated?: Set<string>): AgentMessage[] {
  return chainRangePrune(messages, ctx, diagnostics, relocated).messages;
}

/** {@link applyChainCompressions}, also telling where each output message came from. */
export function chainRangePrune(messages: AgentMessage[], ctx: PruneContext, diagnostics: RenderDiagnostic[], relocated?: Set<string>): ChainPruneResult {
  const unchanged = (): ChainPruneResult => ({ messages, origins: messages.map((_, i) => i) });
  if (!ctx.config.chainCompression.enabled || ctx.indexer.chains.size === 0) return unchanged();
  const report: Report = (d) => {
    if (!diagnostics.some((x) => x.kind === d.kind && x.dedupKey === d.dedupKey)) diagnostics.push(d);
  };
  const accepted = acceptRanges(messages, ctx, report);
  if (accepted.length === 0) return unchanged();

  const edits: Edits = {
    drop: new Set(),
    droppedIds: new Set(),
    droppedKeys: new Set(),
    insertAfter: new Map(),
    stripAt: new Set(),
    relocated: relocated ?? new Set(),
  };
  let lastAssistant = -1;
  // Block ids whose synthetic message is already in the input (a second application).
  const present = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role === "assistant") lastAssistant = i;
    const id = compressedChainId(firstUserText(m)?.trimStart() ?? "");
    if (id !== undefined) present.add(id);
  });
  let lookup: ReturnType<typeof summaryLookup> | undefined;
  const covering = () => {
    lookup ??= summaryLookup(ctx.indexer);
    return lookup;
  };
  for (const r of accepted) editRange(messages, r, { edits, present, lastAssistant, ctx, report, covering });
  dropCoveringSummaries(messages, edits);

  const { drop, insertAfter, stripAt } = edits;
  if (drop.size === 0 && insertAfter.size === 0 && stripAt.size === 0) return unchanged();
  const out: AgentMessage[] = [];
  const origins: (number | null)[] = [];
  messages.forEach((m, i) => {
    if (drop.has(i)) return;
    if (stripAt.has(i)) {
      const final = m as AssistantMessage;
      out.push({ ...final, content: final.content.filter((b) => b?.type !== "thinking") });
    } else out.push(m);
    origins.push(i);
    const synthetic = insertAfter.get(i);
    if (synthetic) {
      out.push(synthetic);
      origins.push(null);
    }
  });
  return { messages: out, origins };
}
