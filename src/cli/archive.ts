/**
 * Archives across machines (issue 18): `--shard K/N` takes one shard of the files (cli/shard.ts),
 * and `--ndjson` prints one JSON line per session as soon as it is done, so that the array jobs of
 * an existing scheduler can each take a shard and stream their results; `condense metrics --merge`
 * puts the lines of every shard back into the document one run over the whole archive prints.
 *
 * A line: `{"schema", "index", "of", "result"}` for a session done, `{"schema", "index", "of",
 * "failure": {"session", "error", "exitCode"}}` for one that failed — `index` its position among
 * all `of` files the command resolved (before sharding), which is what a merge orders by and how
 * it knows every shard is there.
 */
import type { Command } from "commander";
import { readRegularFileSync } from "../util/files.js";
import { errnoWords, UsageError } from "../util/errors.js";
import type { FileOutcome } from "./batch.js";
import type { Output } from "./output.js";
import { parseShard, selectShard } from "./shard.js";

/** The options of a command that processes archives. */
export interface ArchiveOptions {
  shard?: string;
  ndjson?: boolean;
}

/** Add `--shard K/N` and `--ndjson` to a command. */
export function withArchiveOptions(command: Command): Command {
  return command
    .option("--shard <K/N>", "process only shard K of N (a stable split of the files by file name), for array jobs across machines")
    .option("--ndjson", "print one JSON line per session as it finishes (instead of one document at the end)");
}

/** The files of this shard, each one's position among all of them, and how many there are in all. */
export interface ArchiveSelection {
  files: string[];
  positions: number[];
  total: number;
}

/**
 * The files this invocation processes.
 * @throws UsageError for a malformed `--shard`, or `--ndjson` with `--json`
 */
export function selectFiles(all: string[], options: ArchiveOptions & { json?: boolean }): ArchiveSelection {
  if (options.ndjson && options.json) throw new UsageError("--ndjson and --json: choose one (a line per session, or one document)");
  const shard = options.shard === undefined ? undefined : parseShard(options.shard);
  return { ...selectShard(all, shard), total: all.length };
}

/** One NDJSON line. */
export interface ArchiveLine<T> {
  schema: string;
  index: number;
  of: number;
  result?: T;
  failure?: { session: string; error: string; exitCode: number };
}

/** The line of one outcome (`at`: its position among this invocation's files). */
export function archiveLine<T>(schema: string, selection: ArchiveSelection, outcome: FileOutcome<T>, at: number): ArchiveLine<T> {
  const head = { schema, index: selection.positions[at], of: selection.total };
  if (outcome.result !== undefined) return { ...head, result: outcome.result };
  return { ...head, failure: { session: outcome.path, error: outcome.error ?? "", exitCode: outcome.exitCode ?? 1 } };
}

/** A printer of outcomes as NDJSON lines on `out`, or undefined without `--ndjson`. */
export function ndjsonPrinter<T>(
  out: Output,
  schema: string,
  selection: ArchiveSelection,
  ndjson: boolean | undefined,
): ((outcome: FileOutcome<T>, at: number) => void) | undefined {
  if (!ndjson) return undefined;
  // A file Ctrl-C left untouched has no line: a merge then finds it missing.
  return (outcome, at) => {
    if (!outcome.untouched) out.printLine(archiveLine(schema, selection, outcome, at));
  };
}

/**
 * The outcomes of every file from the NDJSON output of all shards, in the order one run over the
 * whole archive would list them.
 * @param paths NDJSON files (or `-` for stdin is not supported: name the files)
 * @param required dotted paths every result must hold (e.g. `target.used`): what the merged
 *   document, its table and its gates read
 * @throws UsageError for a line that is not one of `schema` or lacks a required field, a file that
 *   cannot be read, shards of different archives, a position missing or given twice (a shard
 *   not run, or run twice), or files that hold no line at all
 */
export function readArchiveLines<T>(paths: string[], schema: string, required: string[] = []): { outcomes: FileOutcome<T>[]; total: number } {
  if (paths.length === 0) throw new UsageError("--merge: name the NDJSON files of the shards");
  const byIndex = new Map<number, FileOutcome<T>>();
  let total: number | undefined;
  for (const path of paths) {
    let text: string;
    try {
      text = readRegularFileSync(path, "utf8");
    } catch (error) {
      throw new UsageError(`${path}: cannot read: ${errnoWords(error)}`);
    }
    text.split("\n").forEach((raw, i) => {
      if (raw.trim() === "") return;
      const line = parseLine<T>(raw, `${path}:${i + 1}`, schema, required);
      if (total !== undefined && line.of !== total)
        throw new UsageError(`${path}:${i + 1}: a shard of an archive of ${line.of} sessions, the others hold ${total}`);
      total = line.of;
      if (byIndex.has(line.index)) throw new UsageError(`${path}:${i + 1}: session ${line.index + 1} of ${line.of} appears twice (a shard given twice?)`);
      byIndex.set(
        line.index,
        line.result !== undefined
          ? { path: sessionOf(line.result), result: line.result }
          : { path: line.failure?.session ?? "", error: line.failure?.error ?? "", exitCode: line.failure?.exitCode ?? 1 },
      );
    });
  }
  // No line at all: no shard finished a session (a scheduler's redirect creates the file even when
  // the shard died first). An archive without sessions is refused by the shards themselves.
  if (total === undefined) {
    throw new UsageError(
      paths.length === 1
        ? "--merge: the file holds no session's line (it is empty): did the shard fail or not finish?"
        : `--merge: none of the ${paths.length} files holds a session's line (all are empty): did every shard fail or not finish?`,
    );
  }
  const count = total;
  const missing: number[] = [];
  for (let i = 0; i < count && missing.length < 5; i++) if (!byIndex.has(i)) missing.push(i + 1);
  if (missing.length > 0) {
    throw new UsageError(
      `--merge: ${count - byIndex.size} of ${count} sessions are missing (${missing.join(", ")}${count - byIndex.size > missing.length ? ", …" : ""}): is a shard missing or unfinished?`,
    );
  }
  return { outcomes: Array.from({ length: count }, (_, i) => byIndex.get(i) as FileOutcome<T>), total: count };
}

function parseLine<T>(raw: string, where: string, schema: string, required: string[]): ArchiveLine<T> {
  let line: ArchiveLine<T>;
  try {
    line = JSON.parse(raw) as ArchiveLine<T>;
  } catch {
    throw new UsageError(`${where}: not a JSON line`);
  }
  if (line?.schema !== schema) throw new UsageError(`${where}: not a line of ${schema} (got ${JSON.stringify(line?.schema)})`);
  if (!Number.isSafeInteger(line.index) || !Number.isSafeInteger(line.of) || line.index < 0 || line.index >= line.of) {
    throw new UsageError(`${where}: index ${line.index} of ${line.of} is not a position in the archive`);
  }
  if ((line.result === undefined) === (line.failure === undefined)) throw new UsageError(`${where}: a line holds either a result or a failure`);
  const missing = line.result === undefined ? undefined : required.find((dotted) => fieldAt(line.result, dotted) === undefined);
  if (missing !== undefined) {
    throw new UsageError(`${where}: the result has no ${missing} (written by another version of condense? run that shard again with this one)`);
  }
  return line;
}

/** The value at a dotted path of a parsed JSON value, or undefined. */
function fieldAt(value: unknown, dotted: string): unknown {
  let at = value;
  for (const key of dotted.split(".")) at = at !== null && typeof at === "object" ? (at as Record<string, unknown>)[key] : undefined;
  return at;
}

function sessionOf(result: unknown): string {
  const session = (result as { session?: unknown })?.session;
  return typeof session === "string" ? session : "";
}
