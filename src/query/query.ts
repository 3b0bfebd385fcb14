/**
 * `query` (docs/design.md §8; docs/design.md "Pruned Data Is Still Available", "Multi-occurrence
 * recovery"): the stored original output behind a ref — the offline twin of the extension's
 * `context_tree_query`. Pure: the caller reads sidecar files through the function it passes in.
 *
 * - A short ref `tN` resolves to exactly one record.
 * - An occurrence key `id@timestamp` (or a dedup alias's key) resolves to that one occurrence.
 * - A raw tool-call id returns every occurrence that shares it, indexed records and dedup aliases
 *   alike, oldest first, each labelled `id@timestamp` (a legacy record without a result timestamp
 *   keeps the bare id and is flagged as legacy). Records stored under `id#n` (a removed result
 *   whose own key was unsafe: prune/recovery.ts) count as occurrences of `id`, labelled with the
 *   key they are stored under; an `id@timestamp` no record has finds those stored as
 *   `id#n@timestamp`.
 */
import { basename, join } from "node:path";
import type { ToolCallIndexer } from "../prune/indexer.js";
import { parseOccurrenceKey } from "../context/vocabulary.js";
import type { ToolCallRecord } from "../entries/types.js";
import { blobsFolder } from "../prune/spill.js";
import type { ForkParent } from "../session/fork.js";
import { SidecarRefused } from "../session/sidecars.js";
import { truncateHead, truncationNotice, type HeadTruncation } from "./truncate.js";

/** One occurrence a ref resolved to. */
export interface QueryHit {
  /** The ref as it was asked for. */
  ref: string;
  /** What the block is labelled: the short ref, or `id@timestamp` for raw-id lookups. */
  label: string;
  /** Occurrence key of this occurrence (the bare id for a legacy record). */
  key: string;
  /** The short ref of this occurrence, when it has one. */
  shortRef?: string;
  /** The stored record: the original's when this occurrence is a dedup alias. */
  record: ToolCallRecord;
  /** For a dedup alias: the occurrence key of the original whose output is shown. */
  aliasOf?: string;
  /** True when the occurrence has no result timestamp (a record from before occurrence keys). */
  legacy: boolean;
}

export interface QueryLookup {
  hits: QueryHit[];
  /** Why nothing was found (undefined when something was). */
  unknown?: string;
}

const SHORT_REF = /^t\d+$/;

/**
 * Resolve one ref against the index.
 * @returns every occurrence it names, or `unknown` with the reason
 */
export function lookupRef(indexer: ToolCallIndexer, asked: string): QueryLookup {
  // Refs copied from a summary keep their backticks; `T3` is read as `t3`. Raw ids are taken as given.
  const stripped = asked.trim().replace(/^`(.*)`$/, "$1");
  const ref = /^T\d+$/.test(stripped) ? stripped.toLowerCase() : stripped;
  const single = (key: string, label: string): QueryLookup => {
    const record = indexer.getRecord(key);
    if (!record) return { hits: [], unknown: `${ref} names ${key}, whose record is not in the index` };
    const aliasOf = indexer.dedupAliasToOriginal.get(key);
    return {
      hits: [
        {
          ref,
          label,
          key,
          ...(indexer.shortRefFor(key) ? { shortRef: indexer.shortRefFor(key) } : {}),
          record,
          ...(aliasOf ? { aliasOf } : {}),
          legacy: parseOccurrenceKey(key).resultTimestamp === undefined && record.resultTimestamp === undefined,
        },
      ],
    };
  };
  if (SHORT_REF.test(ref)) {
    const key = indexer.shortRefToKey.get(ref);
    if (key) return single(key, ref);
  }
  const asKey = parseOccurrenceKey(ref);
  if (asKey.resultTimestamp !== undefined && (indexer.records.has(ref) || indexer.dedupAliasToOriginal.has(ref))) {
    return single(ref, ref);
  }
  // A raw id: every occurrence; an `id@timestamp` no record has: the ones stored as `id#n@timestamp`.
  const all =
    asKey.resultTimestamp === undefined
      ? indexer.getRecordsForId(ref, true)
      : indexer.getRecordsForId(asKey.toolCallId, true).filter((e) => parseOccurrenceKey(e.key).resultTimestamp === asKey.resultTimestamp);
  if (all.length > 0) {
    return {
      hits: all.map(({ key, record, aliasOf }) => {
        const shortRef = indexer.shortRefFor(key);
        return {
          ref,
          label: key,
          key,
          ...(shortRef ? { shortRef } : {}),
          record,
          ...(aliasOf ? { aliasOf } : {}),
          legacy: parseOccurrenceKey(key).resultTimestamp === undefined,
        };
      }),
    };
  }
  const chain = /^b\d+$/.test(ref) ? [...indexer.chains.values()].find((c) => c.blockId === ref) : undefined;
  return {
    hits: [],
    unknown: chain
      ? `${ref} is a compressed chain, not a tool call; query its refs instead: ${chain.toolRefs.join(", ") || "(none)"}`
      : SHORT_REF.test(ref)
        ? `no short ref ${ref} in this session's pruner index` +
          (indexer.records.size === 0 ? " (nothing is indexed yet: run `condense run` on the session first)" : "")
        : `no indexed tool call with id or key ${ref} in this session`,
  };
}

/** Where a recovered output came from. */
export type BodySource = "record" | "sidecar" | "preview";

export interface QueryBody {
  /** The full original output. */
  text: string;
  source: BodySource;
  /** The sidecar file read, for spilled records. */
  sidecarPath?: string;
  /** Why the sidecar could not be read (then `text` is the stored head preview). */
  sidecarError?: string;
}

/**
 * Where a spilled record's sidecar may be read: only the file name of its `spillPath`, inside the
 * session's own blobs folder next to the session's real path (a session moved with its folder
 * keeps working; a path elsewhere never leads outside it), then — for a fork made by Pi's `/fork`,
 * whose copied records name its parent's sidecars — inside the parent session's blobs folder
 * (session/fork.ts). The reader (session/sidecars.ts `readSidecar`) checks the rest: a sidecar
 * name, a regular file, no link, a size limit.
 */
export function sidecarFolders(sessionPath: string, sessionId: string, parent: ForkParent | null = null): string[] {
  return [blobsFolder(sessionPath, sessionId), ...(parent ? [blobsFolder(parent.path, parent.id)] : [])];
}

/** The sidecar paths a spilled record may be read from: its file name in each of {@link sidecarFolders}, in order. */
export function sidecarCandidates(spillPath: string, folders: string[]): string[] {
  return folders.map((folder) => join(folder, basename(spillPath)));
}

/**
 * The full original output of a record: its `resultText`, or for a spilled record the first
 * readable sidecar candidate; when none can be read, the stored head preview.
 * @param readText reads a file as UTF-8; throws when it cannot ({@link SidecarRefused} for a refused path)
 */
export function recordBody(record: ToolCallRecord, candidates: string[], readText: (path: string) => string): QueryBody {
  if (!record.spillPath) return { text: record.resultText ?? "", source: "record" };
  let error = "no sidecar path";
  for (const path of candidates) {
    try {
      return { text: readText(path), source: "sidecar", sidecarPath: path };
    } catch (e) {
      error =
        e instanceof SidecarRefused ? `${e.kind}: ${record.spillPath}: ${e.reason}` : `${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
    }
  }
  return { text: record.resultPreview ?? "", source: "preview", sidecarError: error };
}

export interface QueryOutput {
  /** The output as printed: whole, or its head. */
  text: string;
  /** Null when nothing was cut (always with `full`). */
  truncation: HeadTruncation | null;
}

/** The output to print: the whole body with `full`, else its head (2000 lines / 50 KB) plus the notice. */
export function shownOutput(body: string, full: boolean): QueryOutput {
  if (full) return { text: body, truncation: null };
  const t = truncateHead(body);
  if (!t.truncated) return { text: body, truncation: null };
  return { text: t.text, truncation: t };
}

/** Minimal styling hooks for {@link formatQueryBlock} (chalk fits). */
export interface QueryStyle {
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  green: (s: string) => string;
}

const PLAIN: QueryStyle = { bold: (s) => s, dim: (s) => s, red: (s) => s, green: (s) => s };

/**
 * One block of `condense query`: the label, then occurrence, tool, arguments (indented JSON),
 * status OK/ERROR, turn, one line per image of the result (`images`, query/images.ts), where the
 * output came from when that is not the record itself, a blank line, and the output (with the
 * truncation notice when cut).
 */
export function formatQueryBlock(hit: QueryHit, body: QueryBody, output: QueryOutput, style: QueryStyle = PLAIN, images: string[] = []): string {
  const r = hit.record;
  const lines: string[] = [style.bold(`=== ${hit.label} ===`)];
  if (hit.label !== hit.key) lines.push(`Occurrence: ${hit.key}`);
  else if (hit.shortRef) lines.push(`Ref: ${hit.shortRef}`);
  if (hit.legacy) lines.push(style.dim("Occurrence: legacy record (no result timestamp was stored)"));
  if (hit.aliasOf) lines.push(style.dim(`Duplicate of: ${hit.aliasOf} (same output; tool, arguments and turn are the original's)`));
  lines.push(`Tool: ${r.toolName}`);
  lines.push(`Arguments: ${JSON.stringify(r.args ?? null, null, 2)}`);
  lines.push(`Status: ${r.isError ? style.red("ERROR") : style.green("OK")}`);
  // A record back-filled when its chain was compressed was never in a batch: it has no turn.
  lines.push(r.turnIndex < 0 ? "Turn: none (indexed when its chain was compressed)" : `Turn: ${r.turnIndex}`);
  lines.push(...images);
  if (body.source === "sidecar") lines.push(style.dim(`Spilled output read from: ${body.sidecarPath}`));
  if (body.source === "preview") {
    lines.push(style.red(`Spilled output unavailable (${body.sidecarError}); showing the stored head preview`));
  }
  lines.push("");
  let text = output.text;
  if (output.truncation) {
    const t = output.truncation;
    text += `\n${truncationNotice(t).replace(/]$/, `; --full prints all ${t.totalLines.toLocaleString("en-US")}]`)}`;
    if (t.firstLineTooLong) text += "\n(the first line alone is over 50 KB; use --full to see it)";
  }
  lines.push(text);
  return lines.join("\n");
}

/**
 * What the extension's `context_tree_query` tool returns for `ids` (one call), byte for byte — the
 * text `condense query --format tool` prints. Mirrors pi-condense 2.9.1 `src/query-tool.ts` and
 * `ToolCallIndexer.getRecordsForId`: ids are taken as given; a raw id lists every occurrence (dedup
 * aliases shown with their own result timestamp), oldest first, labelled `id@timestamp` when there
 * are several; an unknown id gets the tool's "not found" block; each block is `## toolRef: label`,
 * tool, arguments, status, turn, a blank line and the output cut to 2000 lines / 50 KB (whole with
 * `full`); blocks are joined by `\n\n---\n\n`. A spilled output is read from its `spillPath` as
 * stored; when that fails, the stored preview stands in, as in the tool.
 * @param readText reads a file as UTF-8; throws when it cannot
 * @returns the text, and the ids the index does not know
 */
export function formatToolResult(
  indexer: ToolCallIndexer,
  ids: string[],
  readText: (path: string) => string,
  full = false,
): { text: string; unknown: string[] } {
  const blocks: string[] = [];
  const unknown: string[] = [];
  for (const id of ids) {
    const records = toolRecordsFor(indexer, id);
    if (records.length === 0) {
      unknown.push(id);
      blocks.push(`## toolRef: ${id}\n(not found in index — may not have been summarized yet)`);
      continue;
    }
    for (const record of records) blocks.push(toolBlock(id, record, records.length > 1, readText, full));
  }
  return { text: blocks.join("\n\n---\n\n"), unknown };
}

/** One `## toolRef:` block of the tool's text; `several`: the id names more than one occurrence. */
function toolBlock(id: string, record: ToolCallRecord, several: boolean, readText: (path: string) => string, full: boolean): string {
  const header = [
    `## toolRef: ${several && record.resultTimestamp !== undefined ? `${id}@${record.resultTimestamp}` : id}`,
    ...(several && record.resultTimestamp === undefined ? ["Occurrence: legacy (no resultTimestamp)"] : []),
    `Tool: ${record.toolName}`,
    `Args: ${JSON.stringify(record.args, null, 2)}`,
    `Status: ${record.isError ? "ERROR" : "OK"}`,
    `Turn: ${record.turnIndex}`,
    "",
  ].join("\n");
  let raw = record.resultText;
  if (record.spillPath) {
    try {
      raw = readText(record.spillPath);
    } catch {
      raw = record.resultPreview ?? "(spilled output unavailable — sidecar file missing)";
    }
  }
  const shown = shownOutput(raw, full);
  return `${header}\n${shown.text}${shown.truncation ? `\n${truncationNotice(shown.truncation)}` : ""}`;
}

/**
 * The records the tool lists for one id (the extension's `getRecordsForId`, then `getRecord`): a
 * dedup alias shows its original's record with the alias's own result timestamp.
 */
function toolRecordsFor(indexer: ToolCallIndexer, id: string): ToolCallRecord[] {
  const all = indexer
    .getRecordsForId(id)
    .map(({ key, record, aliasOf }) => (aliasOf ? { ...record, resultTimestamp: parseOccurrenceKey(key).resultTimestamp } : record));
  if (all.length > 0) return all;
  const key = indexer.resolveToolCallId(id);
  const record = key === undefined ? undefined : indexer.records.get(key);
  return record ? [record] : [];
}
