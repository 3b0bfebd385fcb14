/**
 * A worker thread of the `--jobs` pool (see batch.ts): imports the task module named in
 * `workerData`, then runs `fn(path, options)` for each `{id, path}` message and replies with
 * `{id, result}` or `{id, error, exitCode}`.
 */
import { parentPort, workerData } from "node:worker_threads";
import { failureOf } from "./batch.js";

const { module, fn, options } = workerData as { module: string; fn: string; options: unknown };
const task = import(module).then((mod) => {
  const run = mod[fn];
  if (typeof run !== "function") throw new Error(`worker: ${module} has no function ${fn}`);
  return run as (path: string, options: unknown) => Promise<unknown>;
});

parentPort!.on("message", async ({ id, path }: { id: number; path: string }) => {
  try {
    const run = await task;
    parentPort!.postMessage({ id, result: await run(path, options) });
  } catch (error) {
    parentPort!.postMessage({ id, ...failureOf(path, error) });
  }
});
