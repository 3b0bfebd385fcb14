/**
 * Fault injection for the crash tests (test-only; inert in production). `CONDENSE_TEST_FAULT`
 * names one point at which the process kills itself with SIGKILL, leaving on disk exactly what a
 * crash there leaves:
 * - `step:<name>` at a named step of the commit protocol (`journal-tmp`, `journal`, `sidecars:<n>`,
 *   `appended`, `fsynced`, `committed`, `lock-held`, `recover-truncated`, and `undo-truncated`
 *   in `condense undo`);
 * - `append:<bytes>` after writing only the first `<bytes>` bytes of the append (a torn write).
 * The variable is read at each call, so in-process tests may set and clear it.
 */

/** Kill this process with SIGKILL when `CONDENSE_TEST_FAULT` is `step:<name>`. */
export function faultPoint(name: string): void {
  if (process.env.CONDENSE_TEST_FAULT === `step:${name}`) process.kill(process.pid, "SIGKILL");
}

/** The byte count of an `append:<bytes>` fault, or -1 when none is set. */
export function faultAppendLimit(): number {
  const spec = process.env.CONDENSE_TEST_FAULT ?? "";
  if (!spec.startsWith("append:")) return -1;
  const n = Number(spec.slice("append:".length));
  return Number.isInteger(n) && n >= 0 ? n : -1;
}

/** Die now (after a torn write was made on purpose). */
export function faultKill(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL did not end the process");
}
