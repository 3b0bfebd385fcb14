/**
 * The clock. `CONDENSE_NOW` (an ISO time) fixes it so that tests and reproducible runs append
 * identical bytes (docs/design.md §5).
 */
import { UsageError } from "./errors.js";

/** Current time in epoch ms, from `CONDENSE_NOW` when set. @throws UsageError on an unparseable `CONDENSE_NOW` */
export function nowMs(env: NodeJS.ProcessEnv = process.env): number {
  const fixed = env.CONDENSE_NOW;
  if (fixed === undefined || fixed === "") return Date.now();
  const ms = Date.parse(fixed);
  if (Number.isNaN(ms)) throw new UsageError(`CONDENSE_NOW=${JSON.stringify(fixed)} is not an ISO time (e.g. 2026-01-01T00:00:00.000Z)`);
  return ms;
}
