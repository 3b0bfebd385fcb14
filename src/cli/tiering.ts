/**
 * When V8 optimizes condense's functions: later than its default, in every thread. Each command
 * runs many functions a few thousand times per session (the reader, the pipeline's phases, the
 * renders), and V8's default sends most of them to TurboFan, whose compiles cost more CPU than
 * they save on one session; with the budget raised the hot loops still get optimized.
 */
import { setFlagsFromString } from "node:v8";

/**
 * V8's interrupt budget condense runs under (bytecode executed before V8 considers a function for
 * optimization; V8 11's default is 67 584): 16× the default. Measured on 2 cores, Node 20, CPU
 * medians against the default: `run --dry-run` on generated sessions 0.48–0.68× at 10 MB, 0.76× at
 * 30 MB, but 0.96–1.04× at 100 MB and 1.08× at 300 MB (bench/scale.js --base; not explained —
 * perhaps hot code that deoptimizes waits 16× longer each time to be optimized again); `budget`
 * 0.71× and `compact --dry-run` 0.78× at 10 MB; `render` 0.67× at 10 MB, 0.88–1.01× above;
 * `metrics` 0.95–0.96×. Real sessions are a few MB: the default is kept for none. Over 500
 * generated sessions (bench/archive.js, thread CPU, `--jobs 2`) V8's helper threads used 3.1–4.8 s
 * at 4×, 1.8–3.1 s at 16×, 1.3–2.0 s at 64×, while the JavaScript threads ran longer the later they
 * optimize: the estimate was best at 16×.
 */
export const INTERRUPT_BUDGET = 16 * 67584;

/**
 * The V8 flag {@link raiseTieringBudget} sets under V8 `version` (`process.versions.v8`), or
 * undefined when that V8 has no `--interrupt-budget`: V8 11 (Node 20, 21) has it; V8 12 (Node 22)
 * counts invocations instead, tiers up through Maglev, and prints "unrecognized flag" on stderr
 * for it — so there nothing is set.
 */
export function tieringBudgetFlag(version: string = process.versions.v8): string | undefined {
  return Number.parseInt(version, 10) === 11 ? `--interrupt-budget=${INTERRUPT_BUDGET}` : undefined;
}

/**
 * Make V8 optimize later in every thread of this process (a process-wide V8 flag, so worker
 * threads started after it too): a function tiers up to TurboFan after {@link INTERRUPT_BUDGET}
 * units of bytecode instead of the default. Each worker of a `--jobs` pool is an isolate of its
 * own that compiles the same functions again, so there the saving counts once per thread.
 * The CLI (`main`) calls it before the command runs, so the `--jobs` pool's workers start with it.
 * Only under V8 11 ({@link tieringBudgetFlag}).
 */
export function raiseTieringBudget(): void {
  const flag = tieringBudgetFlag();
  if (flag) setFlagsFromString(flag);
}
