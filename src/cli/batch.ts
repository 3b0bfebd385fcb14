/**
 * Processing several sessions: concurrently (`--jobs`), one failing file never stopping the
 * others, progress on a TTY (files done / total, failures, the current file).
 *
 * Two ways to run the per-file work:
 * - in this process under a `p-limit` bound — good for I/O-bound work (`run` waiting on a model);
 * - in a pool of `worker_threads` when the caller names a {@link RemoteTask} and `--jobs` > 1 —
 *   CPU-bound work (`metrics`: parse, index, render) only gets faster on several cores that way.
 *   Each worker imports the task module once and runs one file at a time; results come back as
 *   structured clones. From TypeScript sources (tests) the pool is unavailable and the in-process
 *   path is used; `CONDENSE_WORKERS=0` also forces it (for comparisons and debugging).
 */
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
 * runs in worker threads instead (`work` is then not called).
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
    if (jobs > 1 && files.length > 1 && workerPoolAvailable(remote)) return await runInWorkers<T>(files, Math.min(jobs, files.length), remote, progress);
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
    const head = `${this.label} ${this.done}/${this.total}` + (this.failed ? `, ${this.failed} failed` : "");
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

interface WorkerReply {
  id: number;
  result?: unknown;
  error?: string;
  exitCode?: number;
}

async function runInWorkers<T>(files: string[], size: number, task: RemoteTask, progress: Progress): Promise<FileOutcome<T>[]> {
  const outcomes: FileOutcome<T>[] = new Array(files.length);
  let next = 0;
  const workers: Worker[] = [];
  const runWorker = (): Promise<void> =>
    new Promise((resolve) => {
      const worker = new Worker(WORKER_URL, { workerData: { module: task.module, fn: task.fn, options: task.options } });
      workers.push(worker);
      let current = -1;
      const feed = () => {
        if (next >= files.length) {
          current = -1;
          void worker.terminate().then(() => resolve());
          return;
        }
        current = next++;
        progress.start(files[current]);
        worker.postMessage({ id: current, path: files[current] });
      };
      worker.on("message", (reply: WorkerReply) => {
        const path = files[reply.id];
        if (reply.error !== undefined) {
          outcomes[reply.id] = { path, error: reply.error, exitCode: reply.exitCode ?? 1 };
          progress.finish(path, true);
        } else {
          outcomes[reply.id] = { path, result: reply.result as T };
          progress.finish(path, false);
        }
        feed();
      });
      worker.on("error", (error) => {
        // A crashed worker fails its current file; the pool carries on without it.
        if (current >= 0) {
          outcomes[current] = { path: files[current], ...failureOf(files[current], error) };
          progress.finish(files[current], true);
          current = -1;
        }
        resolve();
      });
      worker.on("exit", () => resolve());
      worker.once("online", feed);
    });
  await Promise.all(Array.from({ length: size }, runWorker));
  // Files no worker got to (every worker crashed) run here, sequentially, so nothing is lost.
  for (let i = 0; i < files.length; i++) {
    if (outcomes[i]) continue;
    try {
      const mod = await import(task.module);
      outcomes[i] = { path: files[i], result: (await mod[task.fn](files[i], task.options)) as T };
    } catch (error) {
      outcomes[i] = { path: files[i], ...failureOf(files[i], error) };
    }
  }
  return outcomes;
}
