/**
 * Processing several sessions: concurrently (`--jobs`), one failing file never stopping the
 * others, progress on a TTY (files done / total, failures, the current file).
 *
 * Two ways to run the per-file work:
 * - in this process under a `p-limit` bound — good for I/O-bound work (`run` waiting on a model);
 * - in a pool of threads when the caller names a {@link RemoteTask} and `--jobs` > 1 — CPU-bound
 *   work (`metrics`: parse, index, render) only gets faster on several cores that way. `--jobs N`
 *   means this thread plus N − 1 `worker_threads`; each worker imports the task module once, and
 *   every thread takes the next file from a shared atomic counter. Results come back as structured
 *   clones. From TypeScript sources (tests) the pool is unavailable and the in-process
 *   path is used; `CONDENSE_WORKERS=0` also forces it (for comparisons and debugging).
 */
import { setMaxListeners } from "node:events";
import pLimit from "p-limit";
import { availableParallelism } from "node:os";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
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

/** Per-file work a worker thread can run: `import(module)[fn](path, options)`. */
export interface RemoteTask {
  /** `import.meta.url`-style URL of the module exporting `fn`. */
  module: string;
  fn: string;
  /** Structured-cloneable options passed as the second argument. */
  options: unknown;
}

/**
 * Ctrl-C during a writing command: the first aborts `signal` (in-flight model calls stop, and a
 * session not yet written stays untouched: exit 130), a second one exits at once. Call
 * `release()` when the work is over.
 */
export function interruptOnSigint(): { signal: AbortSignal; release(): void } {
  const interrupt = new AbortController();
  setMaxListeners(0, interrupt.signal); // one listener per in-flight call
  const onSigint = () => {
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort();
  };
  process.on("SIGINT", onSigint);
  return { signal: interrupt.signal, release: () => process.off("SIGINT", onSigint) };
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

/** The results of the files that succeeded, and the failures with the exit code each asks for. */
export function splitOutcomes<T>(outcomes: FileOutcome<T>[]): { results: T[]; failures: { session: string; error: string; exitCode: number }[] } {
  const results: T[] = [];
  const failures: { session: string; error: string; exitCode: number }[] = [];
  for (const o of outcomes) {
    if (o.result !== undefined) results.push(o.result);
    if (o.error !== undefined) failures.push({ session: o.path, error: o.error, exitCode: o.exitCode ?? 1 });
  }
  return { results, failures };
}

/** A failure as an outcome: CondenseErrors keep their message and code, others are prefixed with the path. */
export function failureOf(path: string, error: unknown): { error: string; exitCode: number } {
  if (error instanceof CondenseError) return { error: error.message, exitCode: error.exitCode };
  return { error: `${path}: ${(error as Error)?.message ?? String(error)}`, exitCode: 1 };
}

const WORKER_URL = new URL("./worker.js", import.meta.url);

/** True when a worker pool can run `task` (compiled JavaScript on both sides). */
export function workerPoolAvailable(task: RemoteTask | undefined): task is RemoteTask {
  if (process.env.CONDENSE_WORKERS === "0") return false;
  return !!task && import.meta.url.endsWith(".js") && task.module.endsWith(".js") && existsSync(fileURLToPath(WORKER_URL));
}

/**
 * Run `work` over every file with at most `jobs` at once; results come back in input order.
 * Failures are caught per file and reported in the outcome. With `remote` and `jobs` > 1 the work
 * is shared between this thread (`work`) and worker threads (`remote`), which must compute the same.
 */
export async function forEachSession<T>(
  files: string[],
  jobs: number,
  out: Output,
  label: string,
  work: (path: string) => Promise<T>,
  remote?: RemoteTask,
): Promise<FileOutcome<T>[]> {
  const progress = new Progress(out, label, files.length);
  try {
    if (jobs > 1 && files.length > 1 && workerPoolAvailable(remote)) {
      return await runInWorkers<T>(files, Math.min(jobs, files.length), remote, work, progress);
    }
    const limit = pLimit(jobs);
    return await Promise.all(
      files.map((path) =>
        limit(async (): Promise<FileOutcome<T>> => {
          progress.start(path);
          try {
            const result = await work(path);
            progress.finish(path, false);
            return { path, result };
          } catch (error) {
            progress.finish(path, true);
            return { path, ...failureOf(path, error) };
          }
        }),
      ),
    );
  } finally {
    progress.stop();
  }
}

/** The spinner line: `label done/total, N failed — current file`. Only for several files on a TTY. */
class Progress {
  private done = 0;
  private failed = 0;
  private readonly active = new Set<string>();
  private readonly spinner;

  private readonly columns: number;

  constructor(
    out: Output,
    private readonly label: string,
    private readonly total: number,
  ) {
    this.spinner = total > 1 ? out.spinner(`${label} 0/${total}`) : null;
    this.columns = (out.stderr as { columns?: number }).columns ?? 80;
  }

  start(path: string): void {
    this.active.add(path);
    this.render();
  }

  finish(path: string, failed: boolean): void {
    this.active.delete(path);
    this.done++;
    if (failed) this.failed++;
    this.render();
  }

  stop(): void {
    this.spinner?.stop();
  }

  private render(): void {
    if (!this.spinner) return;
    const head = `${this.label} ${this.done}/${this.total}${this.failed ? `, ${this.failed} failed` : ""}`;
    const current = [...this.active].pop();
    if (!current) {
      this.spinner.text = head;
      return;
    }
    // One line: the current file, cut from the left to fit the terminal.
    const room = Math.max(10, (this.columns || 80) - head.length - 6);
    this.spinner.text = `${head} — ${current.length > room ? `…${current.slice(current.length - room + 1)}` : current}`;
  }
}

/** Messages from a worker: a file started, a file's outcome, or the queue is empty. */
type WorkerMessage =
  | { type: "start"; id: number }
  | { type: "result"; id: number; result: unknown }
  | { type: "failure"; id: number; error: string; exitCode: number }
  | { type: "done" };

/**
 * The pool: `size - 1` worker threads plus this thread take file indices from one shared atomic
 * counter until the list is exhausted, so no executor waits for another to hand it work (this
 * thread's own work only delays the delivery of results, not the workers).
 */
async function runInWorkers<T>(
  files: string[],
  size: number,
  task: RemoteTask,
  work: (path: string) => Promise<T>,
  progress: Progress,
): Promise<FileOutcome<T>[]> {
  const outcomes: FileOutcome<T>[] = new Array(files.length);
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const take = () => Atomics.add(counter, 0, 1);

  const runWorker = (): Promise<void> =>
    new Promise((resolve) => {
      const worker = new Worker(WORKER_URL, { workerData: { module: task.module, fn: task.fn, options: task.options, files, counter } });
      let current = -1;
      worker.on("message", (message: WorkerMessage) => {
        if (message.type === "start") {
          current = message.id;
          progress.start(files[current]);
        } else if (message.type === "result" || message.type === "failure") {
          const path = files[message.id];
          outcomes[message.id] = message.type === "result" ? { path, result: message.result as T } : { path, error: message.error, exitCode: message.exitCode };
          progress.finish(path, message.type === "failure");
          current = -1;
        } else void worker.terminate();
      });
      // A crashed worker loses its current file; it is run again here after the others.
      worker.on("error", () => {
        if (current >= 0) progress.finish(files[current], false);
        current = -1;
      });
      worker.on("exit", () => resolve());
    });

  const runHere = async (): Promise<void> => {
    for (let i = take(); i < files.length; i = take()) {
      const path = files[i];
      progress.start(path);
      try {
        outcomes[i] = { path, result: await work(path) };
        progress.finish(path, false);
      } catch (error) {
        outcomes[i] = { path, ...failureOf(path, error) };
        progress.finish(path, true);
      }
      // Let the workers' messages (and the spinner) through between files.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  await Promise.all([...Array.from({ length: size - 1 }, runWorker), runHere()]);
  // Files a crashed worker had taken run here, one by one, so nothing is lost.
  for (let i = 0; i < files.length; i++) {
    if (outcomes[i]) continue;
    try {
      outcomes[i] = { path: files[i], result: await work(files[i]) };
    } catch (error) {
      outcomes[i] = { path: files[i], ...failureOf(files[i], error) };
    }
  }
  return outcomes;
}
