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
 *   path is used; `CONDENSE_WORKERS=0` also forces it (for comparisons and debugging). The pool's
 *   threads optimize late: the CLI set V8's flag for the whole process before (tiering.ts), and
 *   every thread compiles the same functions again, so with a thread per core the compiles would
 *   compete with the work.
 */
import { setMaxListeners } from "node:events";
import pLimit from "p-limit";
import { availableParallelism } from "node:os";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { CondenseError } from "../util/errors.js";
import type { ExitState } from "./options.js";
import { cutToColumns, type Output, SPINNER_SPARE_COLUMNS } from "./output.js";

export interface FileOutcome<T> {
  path: string;
  result?: T;
  /** Message of the failure, when the file failed. */
  error?: string;
  /** Exit code the failure asks for (1 runtime, 2 unusable input). */
  exitCode?: number;
  /** Ctrl-C came first: the file was interrupted or never started, and nothing was written to it. */
  untouched?: true;
  /** Warnings given before the failure (when the work kept them, as `warnings` on the error). */
  warnings?: string[];
}

/** Per-file work a worker thread can run: `import(module)[fn](path, options, { signal })`. */
export interface RemoteTask {
  /** `import.meta.url`-style URL of the module exporting `fn`. */
  module: string;
  fn: string;
  /** Structured-cloneable options passed as the second argument. */
  options: unknown;
}

/** What the per-file work gets besides the path: the signal Ctrl-C aborts. */
export interface TaskContext {
  signal?: AbortSignal;
}

/**
 * Ctrl-C during a command over sessions: the first aborts `signal` (no session is started any
 * more, in-flight model calls stop, and a session not yet written stays untouched: exit 130, and
 * the command ends with {@link interruptedMessage}), a second one exits at once. Call `release()`
 * when the work is over.
 */
export function interruptOnSigint(): { signal: AbortSignal; release(): void } {
  const interrupt = new AbortController();
  setMaxListeners(0, interrupt.signal); // one listener per in-flight call
  const onSigint = () => {
    if (interrupt.signal.aborted) process.exit(130);
    // The terminal echoed `^C` where the cursor is: clear that line, so what is printed next (the
    // closing line, a partial table) starts in column 1. A spinner's line is cleared by its stop.
    const terminal = process.stderr.isTTY ? process.stderr : process.stdout.isTTY ? process.stdout : null;
    terminal?.write("\r\x1b[2K");
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

/**
 * The results of the files that succeeded, the failures with the exit code each asks for, and the
 * files Ctrl-C left untouched (interrupted or never started: nothing was written to them).
 */
export function splitOutcomes<T>(outcomes: FileOutcome<T>[]): {
  results: T[];
  failures: { session: string; error: string; exitCode: number }[];
  untouched: string[];
} {
  const results: T[] = [];
  const failures: { session: string; error: string; exitCode: number }[] = [];
  const untouched: string[] = [];
  for (const o of outcomes) {
    if (o.untouched) untouched.push(o.path);
    else if (o.result !== undefined) results.push(o.result);
    else if (o.error !== undefined) failures.push({ session: o.path, error: o.error, exitCode: o.exitCode ?? 1 });
  }
  return { results, failures, untouched };
}

/**
 * What a command interrupted by Ctrl-C was doing to its sessions: writing them (`run`, `compact`),
 * a dry run of that, reading them (`metrics`, `report`: the sessions done are printed above), or
 * reading them for a page nobody sees yet (`report --html`: nothing is printed, no page written).
 */
export type InterruptedWork = "write" | "dry-run" | "read" | "page";

/**
 * The one line an interrupted batch ends with, the same for every command:
 * `interrupted: 3 of 9 sessions done, 1 failed, 5 untouched (nothing was written to them); run
 * the same command again to continue` when writing; `…, 5 not done; a dry run writes nothing`;
 * `…, 5 not done (left out above)` when reading.
 * @param counts `done` = sessions that finished (written, with nothing to do, or read)
 */
export function interruptedLine(counts: { done: number; failed: number; untouched: number }, work: InterruptedWork = "write"): string {
  const total = counts.done + counts.failed + counts.untouched;
  const failed = counts.failed > 0 ? `, ${counts.failed} failed` : "";
  const head = `interrupted: ${counts.done} of ${total} sessions done${failed}`;
  // Ctrl-C came after the last file's work had finished (a write is never cut short): nothing is left.
  if (counts.untouched === 0) return `${head}: the interrupt came after the last one finished; nothing is left to do`;
  if (work === "write") return `${head}, ${counts.untouched} untouched (nothing was written to them); run the same command again to continue`;
  const tail = work === "dry-run" ? "; a dry run writes nothing" : work === "page" ? "; the page was not written" : " (left out above)";
  return `${head}, ${counts.untouched} not done${tail}`;
}

/** What `--json` says about an interrupted batch: counts, and the files nothing was written to. */
export interface InterruptedJson {
  done: number;
  failed: number;
  untouched: string[];
}

/** What `--json` reports about an interrupted batch (the document's `interrupted` field). */
export function interruptedJson(split: { results: unknown[]; failures: unknown[]; untouched: string[] }): InterruptedJson {
  return { done: split.results.length, failed: split.failures.length, untouched: split.untouched };
}

/**
 * The line that ends a batch in which some sessions failed — `2 of 5 sessions failed (listed
 * above); the others were processed` (`theOthers`: what became of them) — or null when none failed
 * or there was one session (its own error says it all).
 */
export function failedSessionsMessage(failed: number, total: number, theOthers: string): string | null {
  return failed > 0 && total > 1 ? `${failed} of ${total} sessions failed (listed above); the others ${theOthers}` : null;
}

/**
 * The line that ends an interrupted batch: for a single session cut short `<file>: interrupted;
 * nothing was written` (reading: `<file>: interrupted`), else {@link interruptedLine}.
 */
export function interruptedMessage(
  split: { results: unknown[]; failures: unknown[]; untouched: string[] },
  total: number,
  work: InterruptedWork = "write",
): string {
  if (total === 1 && split.untouched.length === 1) {
    return `${split.untouched[0]}: interrupted${work === "read" ? "" : work === "page" ? "; the page was not written" : "; nothing was written"}`;
  }
  return interruptedLine({ done: split.results.length, failed: split.failures.length, untouched: split.untouched.length }, work);
}

/**
 * The end of a writing command over its files: the exit code (a single file's failure keeps its
 * code — 2 for unusable input; with several, any failure is 1; after Ctrl-C, 130), the failures
 * printed on stderr (in every format), and what `--json` says about an interruption.
 */
export function settleBatch(
  out: Output,
  exit: ExitState,
  split: ReturnType<typeof splitOutcomes>,
  total: number,
  signal: AbortSignal,
): InterruptedJson | undefined {
  const { failures } = split;
  if (failures.length > 0) exit.code = total === 1 ? failures[0].exitCode : 1;
  // On stderr in every format (with --json and --ndjson too): the document holds them, a CI log shows them.
  for (const f of failures) out.error(f.error);
  if (!signal.aborted) return undefined;
  exit.code = 130;
  return interruptedJson(split);
}

/** An outcome for a file whose work ended: interrupted (exit 130 after Ctrl-C) counts as untouched. */
function outcomeOf<T>(path: string, error: unknown, signal: AbortSignal | undefined): FileOutcome<T> {
  const failure = failureOf(path, error);
  if (signal?.aborted && failure.exitCode === 130) return { path, untouched: true };
  return { path, ...failure };
}

/**
 * A failure as an outcome: CondenseErrors keep their message and code, others are prefixed with
 * the path; warnings the work kept on the error (`warnings`) come along.
 */
export function failureOf(path: string, error: unknown): { error: string; exitCode: number; warnings?: string[] } {
  const kept = (error as { warnings?: unknown } | null)?.warnings;
  const warnings = Array.isArray(kept) && kept.length > 0 ? { warnings: kept.map(String) } : {};
  if (error instanceof CondenseError) return { error: error.message, exitCode: error.exitCode, ...warnings };
  return { error: `${path}: ${(error as Error)?.message ?? String(error)}`, exitCode: 1, ...warnings };
}

const WORKER_URL = new URL("./worker.js", import.meta.url);

/** True when a worker pool can run `task` (compiled JavaScript on both sides). */
export function workerPoolAvailable(task: RemoteTask | undefined): task is RemoteTask {
  if (process.env.CONDENSE_WORKERS === "0") return false;
  return !!task && import.meta.url.endsWith(".js") && task.module.endsWith(".js") && existsSync(fileURLToPath(WORKER_URL));
}

/** How {@link forEachSession} runs the work and reports each file. */
export interface BatchOptions<T> {
  /** Files at most at once (`--jobs`). */
  jobs: number;
  /** The progress line's label (`condensing`, `metrics`, …). */
  label: string;
  /** The work in this thread. */
  work: (path: string, context: TaskContext) => Promise<T>;
  /** The same work for worker threads (CPU-bound work only gets faster on several cores that way). */
  remote?: RemoteTask;
  /**
   * Ctrl-C ({@link interruptOnSigint}): once aborted no file is started, in-flight files end as
   * the work decides (an exit-130 failure counts as untouched), and worker threads are told to stop.
   */
  signal?: AbortSignal;
  /** Each file's outcome as soon as it is known (in the order files finish). */
  onOutcome?: (outcome: FileOutcome<T>, index: number) => void;
  /** Each file's outcome in input order, as soon as it and every file before it are known. */
  onOrdered?: (outcome: FileOutcome<T>, index: number) => void;
}

/**
 * Run the work over every file with at most `jobs` at once; results come back in input order.
 * Failures are caught per file and reported in the outcome. With `remote` and `jobs` > 1 the work
 * is shared between this thread and `jobs − 1` worker threads, which must compute the same.
 * After `signal` aborts, files not yet started come back `untouched`.
 */
export async function forEachSession<T>(files: string[], out: Output, options: BatchOptions<T>): Promise<FileOutcome<T>[]> {
  const progress = new Progress(out, options.label, files.length);
  const deliver = orderedDelivery(files.length, options);
  try {
    await progress.ready(); // else loading ora waits on the work, and the line may show only at its end
    if (options.jobs > 1 && files.length > 1 && workerPoolAvailable(options.remote)) {
      return await runInWorkers<T>(files, Math.min(options.jobs, files.length), options.remote, options, progress, deliver);
    }
    const limit = pLimit(options.jobs);
    return await Promise.all(
      files.map((path, i) =>
        limit(async (): Promise<FileOutcome<T>> => {
          if (options.signal?.aborted) {
            deliver({ path, untouched: true }, i);
            return { path, untouched: true };
          }
          progress.start(path);
          const outcome = await attempt(path, options.work, options.signal);
          progress.finish(path, outcome.error !== undefined);
          deliver(outcome, i);
          return outcome;
        }),
      ),
    );
  } finally {
    progress.stop();
  }
}

/** Run the work on one file; a failure becomes the outcome (interrupted after Ctrl-C: untouched). */
async function attempt<T>(path: string, work: BatchOptions<T>["work"], signal: AbortSignal | undefined): Promise<FileOutcome<T>> {
  try {
    return { path, result: await work(path, { signal }) };
  } catch (error) {
    return outcomeOf(path, error, signal);
  }
}

/** Hands each outcome to `onOutcome` at once and to `onOrdered` in input order. */
function orderedDelivery<T>(count: number, options: BatchOptions<T>): (outcome: FileOutcome<T>, index: number) => void {
  const waiting = new Map<number, FileOutcome<T>>();
  let next = 0;
  return (outcome, index) => {
    options.onOutcome?.(outcome, index);
    if (!options.onOrdered) return;
    waiting.set(index, outcome);
    while (next < count && waiting.has(next)) {
      const ready = waiting.get(next) as FileOutcome<T>;
      waiting.delete(next);
      options.onOrdered(ready, next++);
    }
  };
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

  /** Settles once the line is on screen (at once without one); see `Spinner.ready` (output.ts). */
  ready(): Promise<void> {
    return this.spinner?.ready ?? Promise.resolve();
  }

  stop(): void {
    this.spinner?.stop();
  }

  private render(): void {
    if (!this.spinner) return;
    const head = `${this.label} ${this.done}/${this.total}${this.failed ? `, ${this.failed} failed` : ""}`;
    const current = [...this.active].pop();
    if (!current) {
      // Between two files of one executor: drawn on ora's tick, so the line does not lose its file for a frame.
      this.spinner.setText(head, false);
      return;
    }
    // One line: the current file, cut from the left to fit the terminal with room for a `^C` echo.
    const room = Math.max(10, (this.columns || 80) - head.length - 5 - SPINNER_SPARE_COLUMNS);
    this.spinner.text = `${head} — ${cutToColumns(current, room, "start")}`;
  }
}

/** Messages from a worker: a file started, a file's outcome, or the queue is empty. */
type WorkerMessage =
  | { type: "start"; id: number }
  | { type: "result"; id: number; result: unknown }
  | { type: "failure"; id: number; error: string; exitCode: number; warnings?: string[] }
  | { type: "done" };

/** The outcome a worker's message reports (a failure with exit code 130 after Ctrl-C: untouched). */
function outcomeFromWorker<T>(path: string, message: WorkerMessage, signal: AbortSignal | undefined): FileOutcome<T> {
  if (message.type === "result") return { path, result: message.result as T };
  if (message.type !== "failure") return { path, error: "worker: unexpected message", exitCode: 1 };
  if (signal?.aborted && message.exitCode === 130) return { path, untouched: true };
  return { path, error: message.error, exitCode: message.exitCode, ...(message.warnings ? { warnings: message.warnings } : {}) };
}

/**
 * The pool: `size - 1` worker threads plus this thread take file indices from one shared atomic
 * counter until the list is exhausted, so no executor waits for another to hand it work (this
 * thread's own work only delays the delivery of results, not the workers). On abort the counter
 * jumps past the end (nobody takes another file) and every worker is sent `abort`, which aborts
 * the signal its task gets as a third argument.
 */
async function runInWorkers<T>(
  files: string[],
  size: number,
  task: RemoteTask,
  options: BatchOptions<T>,
  progress: Progress,
  deliver: (outcome: FileOutcome<T>, index: number) => void,
): Promise<FileOutcome<T>[]> {
  const { signal } = options;
  const outcomes: FileOutcome<T>[] = new Array(files.length);
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const take = () => Atomics.add(counter, 0, 1);
  const workers: Worker[] = [];
  const onAbort = () => {
    Atomics.store(counter, 0, files.length);
    for (const worker of workers) worker.postMessage({ type: "abort" });
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  const settle = (i: number, outcome: FileOutcome<T>) => {
    outcomes[i] = outcome;
    progress.finish(files[i], outcome.error !== undefined);
    deliver(outcome, i);
  };

  const runWorker = (): Promise<void> =>
    new Promise((resolve) => {
      const worker = new Worker(WORKER_URL, { workerData: { module: task.module, fn: task.fn, options: task.options, files, counter } });
      workers.push(worker);
      let current = -1;
      worker.on("message", (message: WorkerMessage) => {
        if (message.type === "start") {
          current = message.id;
          progress.start(files[current]);
        } else if (message.type === "result" || message.type === "failure") {
          current = -1;
          settle(message.id, outcomeFromWorker(files[message.id], message, signal));
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
      progress.start(files[i]);
      settle(i, await attempt(files[i], options.work, signal));
      // Let the workers' messages (and the spinner) through between files.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  try {
    await Promise.all([...Array.from({ length: size - 1 }, runWorker), runHere()]);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  // Files a crashed worker had taken run here, one by one, so nothing is lost (after Ctrl-C none is
  // started: the ones nobody finished are untouched).
  for (let i = 0; i < files.length; i++) {
    if (outcomes[i]) continue;
    settle(i, signal?.aborted ? { path: files[i], untouched: true } : await attempt(files[i], options.work, signal));
  }
  return outcomes;
}
