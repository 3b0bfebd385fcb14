/**
 * The per-file work of `condense run` over several sessions, in a module of its own so worker
 * threads can import it without the command line (see batch.ts): the main job on one session, its
 * warnings and the summarizer's notices kept with its outcome (the command prints them in input
 * order, so the output is the same whatever finishes first).
 */
import { runSession, type RunFileResult, type RunSessionOptions } from "../pipeline/run.js";
import type { TaskContext } from "./batch.js";

/** The options of {@link runTask}: {@link RunSessionOptions} without the signal (structured-cloneable). */
export type RunTaskOptions = Omit<RunSessionOptions, "signal">;

/**
 * Run the main job on one session, printing nothing: the warnings are in the result's `warnings`,
 * or — when the session fails — on the error as `warnings`.
 * @throws what `runSession` throws, with the warnings given before the failure as `warnings`
 */
export async function runTask(path: string, options: RunTaskOptions, context: TaskContext = {}): Promise<RunFileResult> {
  const warnings: string[] = [];
  const keep = (message: string) => warnings.push(message);
  try {
    return await runSession(path, { ...options, signal: context.signal ?? new AbortController().signal }, { warn: keep, notice: keep });
  } catch (error) {
    if (error && typeof error === "object") Object.assign(error, { warnings });
    throw error;
  }
}

/** URL of this module, for the worker pool. */
export const RUN_TASK_MODULE = import.meta.url;
