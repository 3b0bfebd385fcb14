/**
 * Processing several sessions: concurrently under a `p-limit` bound (`--jobs`), one failing file
 * never stopping the others, progress on a TTY.
 */
import pLimit from "p-limit";
import { availableParallelism } from "node:os";
import { CondenseError } from "../util/errors.js";
import type { Output } from "./output.js";

export interface FileOutcome<T> {
  path: string;
  result?: T;
  /** Message of the failure, when the file failed. */
  error?: string;
  /** Exit code the failure asks for (1 runtime, 2 unusable input). */
  exitCode?: number;
}

/** Default `--jobs`: the number of cores. */
export function defaultJobs(): number {
  return Math.max(1, availableParallelism());
}

/** Parse a positive integer option. @throws CondenseError (exit 2) naming the option */
export function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CondenseError(`${name}: expected a positive integer, got ${JSON.stringify(value)}`, 2);
  return n;
}

/**
 * Run `work` over every file with at most `jobs` at once; results come back in input order.
 * Failures are caught per file and reported in the outcome.
 */
export async function forEachSession<T>(
  files: string[],
  jobs: number,
  out: Output,
  label: string,
  work: (path: string) => Promise<T>,
): Promise<FileOutcome<T>[]> {
  const limit = pLimit(jobs);
  const spinner = files.length > 1 ? out.spinner(`${label} 0/${files.length}`) : null;
  let done = 0;
  let failed = 0;
  const outcomes = await Promise.all(
    files.map((path) =>
      limit(async (): Promise<FileOutcome<T>> => {
        if (spinner) spinner.text = `${label} ${done}/${files.length}${failed ? `, ${failed} failed` : ""} — ${path}`;
        try {
          return { path, result: await work(path) };
        } catch (error) {
          failed++;
          const exitCode = error instanceof CondenseError ? error.exitCode : 1;
          const message = error instanceof CondenseError ? error.message : `${path}: ${(error as Error)?.message ?? String(error)}`;
          return { path, error: message, exitCode };
        } finally {
          done++;
          if (spinner) spinner.text = `${label} ${done}/${files.length}${failed ? `, ${failed} failed` : ""}`;
        }
      }),
    ),
  );
  spinner?.stop();
  return outcomes;
}
