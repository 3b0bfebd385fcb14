/**
 * Usage arithmetic for summarizer calls, in one place: tokens in and out and cost in USD, summed
 * left to right in the order given (floating-point sums depend on the order, and the appended
 * stats must not).
 */
import type { SummarizerUsage } from "./types.js";

/** `{input: 0, output: 0, cost: 0}`, a fresh object. */
export function zeroUsage(): SummarizerUsage {
  return { input: 0, output: 0, cost: 0 };
}

/** Add `more` to `total` in place (nothing for undefined). @returns `total` */
export function addUsage(total: SummarizerUsage, more: SummarizerUsage | undefined): SummarizerUsage {
  if (more) {
    total.input += more.input;
    total.output += more.output;
    total.cost += more.cost;
  }
  return total;
}

/** The sum of the given usages, left to right (undefined ones skipped). */
export function sumUsage(...parts: (SummarizerUsage | undefined)[]): SummarizerUsage {
  const total = zeroUsage();
  for (const part of parts) addUsage(total, part);
  return total;
}

/** True when anything was used. */
export function hasUsage(u: SummarizerUsage): boolean {
  return u.input > 0 || u.output > 0 || u.cost > 0;
}
