/**
 * Entries condense wrote that a later Pi write left off the active branch (issue 16). Pi 1.6 keeps
 * its leaf in memory and appends each message as a child of it; when `run` appended to a session
 * Pi still had open, Pi's next message is a child of the entry *before* condense's, so they hang off
 * the branch on a side path nobody reads. Found as: a chain of `context-prune-*` entries (with the
 * context edits of a `pi`-target run among them), each the
 * only child of the one before, the first a child of an entry on the active branch, the last a leaf,
 * none on the branch — a side branch of pruning entries only (a user's own branch has messages on
 * it). `run` says so and applies them again on the current branch, reusing the summaries they hold
 * ({@link storedAnswers}) so the model is not asked again for them.
 */
import { chainLookupKeys, summaryLookup, UNCOVERED_HEADING } from "../chain/compress.js";
import { recordKeyOf } from "../context/vocabulary.js";
import { readPruneEntry } from "../entries/read.js";
import { CONTEXT_EDITS_TYPE, CUSTOM_TYPES } from "../entries/types.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import { childrenOf, type Session } from "../session/session.js";
import type { SessionEntry } from "../session/types.js";
import { answerFromSummary, withoutRecoveryHint } from "../summarize/refs.js";
import { batchKeyOf, fusionKeyOf, type StoredAnswers } from "../summarize/reuse.js";
import { lineOf } from "../report/session-metrics.js";

/** One write left off the active branch. */
export interface StrandedWrite {
  /** Its entries, parent before child. */
  entries: SessionEntry[];
  /** 1-based lines of the first and last (null when unknown). */
  firstLine: number | null;
  lastLine: number | null;
  /** The first entry's timestamp (condense stamps every entry of a write with the write's time). */
  writtenAt: string;
  /** The branch entry that took their place: the branch's next entry after their parent. */
  displacedBy: { id: string; line: number | null; timestamp: string } | null;
}

const PRUNE_TYPES = new Set<string>(Object.values(CUSTOM_TYPES));

/**
 * An entry of a condense write: a `context-prune-*` entry of a kind the pruner writes, or — written
 * for stock Pi (`run --target pi`) — a `context_edit` or the `condense-context-edits` entry listing them.
 */
const isPruneEntry = (e: SessionEntry) =>
  e.type === "context_edit" ||
  ((e.type === "custom" || e.type === "custom_message") && (PRUNE_TYPES.has(String(e.customType)) || e.customType === CONTEXT_EDITS_TYPE));

/**
 * The writes of `session` left off its active branch that still matter, in file order: those
 * holding a summary of a call the branch's index does not know yet (once applied again, the old
 * copy is left alone and no longer reported).
 * @param indexer the index of the active branch as read (before any planning advances it)
 */
export function strandedWrites(session: Session, indexer: Pick<ToolCallIndexer, "getRecord">): StrandedWrite[] {
  return allStrandedWrites(session).filter((w) =>
    w.entries.some((e) => {
      const read = readPruneEntry(e);
      return read?.kind === "summary" && read.refs.some((r) => indexer.getRecord(recordKeyOf(r)) === undefined);
    }),
  );
}

/** Every write of `session` left off its active branch (see the module comment), in file order. */
export function allStrandedWrites(session: Session): StrandedWrite[] {
  // The branch's ids are gathered at the first pruning entry, the children map at the first one off
  // the branch: a session condense never wrote to (every one Pi wrote alone) pays one pass over the
  // entry types, one whose writes are all on the branch no children map.
  let onBranch: Set<string> | undefined;
  let children: Map<string | null, SessionEntry[]> | undefined;
  const out: StrandedWrite[] = [];
  for (const first of session.entries) {
    if (!isPruneEntry(first) || first.parentId === null) continue;
    onBranch ??= new Set(session.branch.map((e) => e.id));
    if (onBranch.has(first.id) || !onBranch.has(first.parentId)) continue;
    children ??= childrenOf(session);
    const chain = [first];
    let ok = true;
    for (let next = children.get(first.id) ?? []; next.length > 0; next = children.get(chain[chain.length - 1].id) ?? []) {
      if (next.length > 1 || !isPruneEntry(next[0]) || onBranch.has(next[0].id)) {
        ok = false;
        break;
      }
      chain.push(next[0]);
    }
    if (!ok) continue;
    const at = session.branch.findIndex((e) => e.id === first.parentId);
    const displacing = at >= 0 ? session.branch[at + 1] : undefined;
    out.push({
      entries: chain,
      firstLine: lineOf(session, first),
      lastLine: lineOf(session, chain[chain.length - 1]),
      writtenAt: first.timestamp,
      displacedBy: displacing ? { id: displacing.id, line: lineOf(session, displacing), timestamp: displacing.timestamp } : null,
    });
  }
  return out;
}

/**
 * The answers the stranded writes hold, ready for `reuse.ts`: each summary back in the label form
 * the summarizer gave (by its calls' occurrence keys), and each fused chain body by the summaries
 * it fused — found as the chain compression finds them, over the branch's summaries followed by
 * the stranded ones (the order a new run on the current branch has them in).
 */
export function storedAnswers(session: Session, stranded: StrandedWrite[]): StoredAnswers {
  const batches = new Map<string, string>();
  const fusions = new Map<string, string>();
  const strandedEntries = stranded.flatMap((w) => w.entries);
  const indexer = ToolCallIndexer.fromBranch([...session.branch, ...strandedEntries]);
  const covering = summaryLookup(indexer);
  for (const entry of strandedEntries) {
    const read = readPruneEntry(entry);
    if (read?.kind === "summary") {
      const names = (read.entry.details as { toolNames?: unknown } | undefined)?.toolNames;
      const body = indexer.summaries.find((s) => s.entryId === entry.id)?.text;
      if (body !== undefined && Array.isArray(names) && read.refs.length > 0) {
        batches.set(batchKeyOf(read.refs.map(recordKeyOf)), answerFromSummary(body, read.refs, names.map(String)));
      }
    } else if (read?.kind === "chain" && read.data.rangeSummaryText) {
      const occurrence = read.data.droppedOccurrenceKeys ?? [];
      const keys = chainLookupKeys({ middleOccurrenceKeys: occurrence, middleToolCallIds: read.data.droppedToolCallIds });
      const bodies = covering(keys, occurrence.length === 0);
      // The fused answer is the body before the calls no summary covered (compress.ts coveredBody),
      // without the recovery hint a run adds once; a body that is just the summaries joined was no answer.
      const text = withoutRecoveryHint(read.data.rangeSummaryText);
      const cut = text.indexOf(UNCOVERED_HEADING);
      const answer = cut >= 0 ? text.slice(0, cut) : text;
      const joined = bodies.map(withoutRecoveryHint).join("\n\n");
      if (bodies.length >= 2 && read.data.bodySource !== "deterministic" && answer !== joined) fusions.set(fusionKeyOf(bodies), answer);
    }
  }
  return { batches, fusions };
}

/**
 * `s.jsonl: 56 entries condense wrote at 2026-03-01 12:00:00 (lines 113–168) are off the active
 * branch — Pi appended line 169 (12:03:10) after line 112, so Pi does not see them; applying them
 * again on the current branch, reusing the summaries they hold` (`doing`: what the command does —
 * a run applies them, a dry run would, a reading command says that `condense run` does)
 */
export function describeStranded(session: Pick<Session, "path">, w: StrandedWrite, doing: "run" | "dry-run" | "read"): string {
  const lines = w.firstLine === null ? "" : w.lastLine === w.firstLine ? ` (line ${w.firstLine})` : ` (lines ${w.firstLine}–${w.lastLine})`;
  const by = w.displacedBy
    ? ` — Pi appended ${w.displacedBy.line === null ? `entry ${w.displacedBy.id}` : `line ${w.displacedBy.line}`} (${clock(w.displacedBy.timestamp)}) to the branch before them, so Pi does not see them`
    : "";
  const what = doing === "run" ? "applying them again" : doing === "dry-run" ? "a real run applies them again" : "`condense run` applies them again";
  return `${session.path}: ${w.entries.length} entries condense wrote at ${clock(w.writtenAt)}${lines} are off the active branch${by}; ${what} on the current branch, reusing the summaries they hold`;
}

/** `2026-03-01 12:00:00` (UTC) from an ISO timestamp; the input when it is not one. */
function clock(iso: string): string {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? `${new Date(t).toISOString().slice(0, 19).replace("T", " ")} UTC` : String(iso);
}

/**
 * For the commands that read a session (`render`, `metrics`): one warning per write of condense's
 * left off the active branch whose summaries the branch lacks ({@link strandedWrites}), saying
 * that Pi does not see them and that `condense run` applies them again.
 */
export function strandedWarnings(session: Session, indexer: Pick<ToolCallIndexer, "getRecord">): string[] {
  return strandedWrites(session, indexer).map((w) => describeStranded(session, w, "read"));
}
