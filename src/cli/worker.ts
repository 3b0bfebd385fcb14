/**
 * A worker thread of the `--jobs` pool (see batch.ts): imports the task module named in
 * `workerData`, then takes file indices from the shared counter until the list is exhausted,
 * running `fn(path, options, { signal })` for each and posting `start`, then `result` or
 * `failure`; `done` at the end. An `abort` message from the pool (Ctrl-C) aborts `signal`.
 */
import { setMaxListeners } from "node:events";
import { parentPort, workerData } from "node:worker_threads";
import { failureOf } from "./batch.js";

const { module, fn, options, files, counter } = workerData as {
  module: string;
  fn: string;
  options: unknown;
  files: string[];
  counter: Int32Array;
};

const port = parentPort;
if (!port) throw new Error("worker.ts runs only as a worker thread");
const mod = await import(module);
const run = mod[fn] as (path: string, options: unknown, runtime: { signal: AbortSignal }) => Promise<unknown>;
const interrupt = new AbortController();
setMaxListeners(0, interrupt.signal); // one listener per in-flight model call, as in the main thread
port.on("message", (message: { type?: string }) => {
  if (message?.type === "abort") interrupt.abort();
});
// The listener must not keep the thread alive once the queue is empty.
port.unref();
if (typeof run !== "function") throw new Error(`worker: ${module} has no function ${fn}`);
for (let i = Atomics.add(counter, 0, 1); i < files.length; i = Atomics.add(counter, 0, 1)) {
  port.postMessage({ type: "start", id: i });
  try {
    port.postMessage({ type: "result", id: i, result: await run(files[i], options, { signal: interrupt.signal }) });
  } catch (error) {
    port.postMessage({ type: "failure", id: i, ...failureOf(files[i], error) });
  }
}
port.postMessage({ type: "done" });
