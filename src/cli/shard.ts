/**
 * Splitting an archive across machines (`--shard K/N`, issue 18): a stable partition of the files
 * by name, so that N runs of the same command — the array jobs of a scheduler (a Kubernetes Indexed
 * Job, a Slurm array, a CI matrix), each on its own machine — together process every file exactly
 * once. A file's shard is decided by its name alone (Pi names each session file by its start time
 * and id), hashed: machines that mount the archive at different places agree, and files coming and
 * going move no other file to another shard.
 */
import { createHash } from "node:crypto";
import { basename } from "node:path";
import { UsageError } from "../util/errors.js";

/** One shard of N: `index` is 1-based (K of `--shard K/N`). */
export interface Shard {
  index: number;
  count: number;
}

/**
 * Parse `K/N` (1 ≤ K ≤ N).
 * @throws UsageError naming the flag and the accepted form
 */
export function parseShard(value: string): Shard {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(value);
  const index = m ? Number(m[1]) : Number.NaN;
  const count = m ? Number(m[2]) : Number.NaN;
  if (!m || !Number.isSafeInteger(count) || count < 1 || index < 1 || index > count) {
    throw new UsageError(`--shard: expected K/N with 1 ≤ K ≤ N (e.g. 2/8), got ${JSON.stringify(value)}`);
  }
  return { index, count };
}

/** The 1-based shard of a file name: the first 4 bytes of its SHA-1, modulo N, plus one. */
export function shardOfKey(key: string, count: number): number {
  return (createHash("sha1").update(key).digest().readUInt32BE(0) % count) + 1;
}

/**
 * The files of one shard, with each one's position in the whole list (what a merge orders by).
 * @param files every file the command resolved, in order
 */
export function selectShard(files: string[], shard: Shard | undefined): { files: string[]; positions: number[] } {
  if (!shard || shard.count === 1) return { files, positions: files.map((_, i) => i) };
  const out: string[] = [];
  const positions: number[] = [];
  files.forEach((file, i) => {
    if (shardOfKey(basename(file), shard.count) === shard.index) {
      out.push(file);
      positions.push(i);
    }
  });
  return { files: out, positions };
}
