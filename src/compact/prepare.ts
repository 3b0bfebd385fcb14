/**
 * What a compaction summarizes and keeps (Pi 1.6 `prepareCompaction` in pi-coding-agent
 * `dist/core/compaction/compaction.js`; docs/design.md §10).
 *
 * On the branch's projection: the summarized span starts after the newest compaction (whose kept
 * tail Pi's projection already selected) or at the start; the cut point keeps the newest
 * `keepRecentTokens`; a split turn's early part is summarized apart (`turnPrefixMessages`). File
 * operations come from the summarized messages plus the previous compaction's `details`.
 */
import { projectEntries, type ProjectedEntry } from "../context/projection.js";
import type { AgentMessage, SessionEntry } from "../session/types.js";
import { findCutPoint } from "./cut-point.js";
import { estimateProjectedContextTokens } from "./estimate.js";
import { addPreviousDetails, createFileOps, extractFileOpsFromMessage, type FileOps } from "./file-ops.js";
import type { CompactionSettings } from "./settings.js";

/** Pi's `CompactionPreparation`, plus where the cut sits in the branch. */
export interface CompactionPreparation {
  firstKeptEntryId: string;
  /** Messages before the cut (or before the split turn) since the previous kept boundary. */
  messagesToSummarize: AgentMessage[];
  /** The split turn's messages before the cut (empty unless `isSplitTurn`). */
  turnPrefixMessages: AgentMessage[];
  isSplitTurn: boolean;
  /** Pi's estimate of the context before compaction (tokens). */
  tokensBefore: number;
  /** The newest compaction's summary, when the branch has one. */
  previousSummary?: string;
  fileOps: FileOps;
  settings: CompactionSettings;
  /** The projection the preparation was made on. */
  projected: ProjectedEntry[];
  /** Index in `projected` of the first kept entry, and of the split turn's start (-1 when not split). */
  firstKeptIndex: number;
  turnStartIndex: number;
}

/** Why there is nothing to compact, in Pi's words (`AgentSession.compact`). */
export type NothingToCompact = "Already compacted" | "Nothing to compact (session too small)";

/** Messages an entry gives the summary: none from a compaction, no system messages (prompt state). */
function summaryMessages(entry: ProjectedEntry): AgentMessage[] {
  if (entry.sourceEntry.type === "compaction") return [];
  return entry.messages.filter((m) => m.role !== "system");
}

/**
 * Prepare a compaction of `branch` (root → leaf), or say why there is nothing to compact: the leaf
 * is already a compaction, or everything fits in `keepRecentTokens` (nothing before the cut).
 * @param projected the branch's projected entries, when already computed
 */
export function prepareCompaction(
  branch: SessionEntry[],
  settings: CompactionSettings,
  projected: ProjectedEntry[] = projectEntries(branch),
): CompactionPreparation | NothingToCompact {
  if (branch.length > 0 && branch[branch.length - 1].type === "compaction") return "Already compacted";
  const prevIndex = projected.findIndex((e) => e.sourceEntry.type === "compaction" && e.messages.length > 0);
  const prev = prevIndex >= 0 ? projected[prevIndex].sourceEntry : undefined;
  const previous = prev?.type === "compaction" ? prev : undefined;
  const previousSummary = previous?.summary;
  const boundaryStart = prevIndex + 1;
  const tokensBefore = estimateProjectedContextTokens(projected, branch).tokens;
  const cut = findCutPoint(projected, boundaryStart, projected.length, settings.keepRecentTokens);
  const firstKept = projected[cut.firstKeptEntryIndex]?.sourceEntry;
  if (!firstKept?.id) return "Nothing to compact (session too small)";
  const historyEnd = cut.isSplitTurn ? cut.turnStartIndex : cut.firstKeptEntryIndex;
  const messagesToSummarize = projected.slice(boundaryStart, historyEnd).flatMap(summaryMessages);
  const turnPrefixMessages = cut.isSplitTurn ? projected.slice(cut.turnStartIndex, cut.firstKeptEntryIndex).flatMap(summaryMessages) : [];
  if (messagesToSummarize.length === 0 && turnPrefixMessages.length === 0) return "Nothing to compact (session too small)";

  const fileOps = createFileOps();
  if (previous) addPreviousDetails(previous.details, previous.fromHook, fileOps);
  for (const message of messagesToSummarize) extractFileOpsFromMessage(message, fileOps);
  for (const message of turnPrefixMessages) extractFileOpsFromMessage(message, fileOps);
  return {
    firstKeptEntryId: firstKept.id,
    messagesToSummarize,
    turnPrefixMessages,
    isSplitTurn: cut.isSplitTurn,
    tokensBefore,
    ...(previousSummary !== undefined ? { previousSummary } : {}),
    fileOps,
    settings,
    projected,
    firstKeptIndex: cut.firstKeptEntryIndex,
    turnStartIndex: cut.turnStartIndex,
  };
}
