/**
 * The test runner's environment is not a user's: a CI runner sets `CI`, and many set `FORCE_COLOR`
 * (colour in their logs), `NO_COLOR` or `COLUMNS`. Each changes what condense prints — `CI` stops
 * ora drawing the progress line (is-interactive), `FORCE_COLOR` and `NO_COLOR` decide colour
 * (output.ts, colorLevel), `COLUMNS` the width of tables on a pipe (table.ts) — so the tests start
 * without them and set what they test themselves. Once, CI's `CI` failed the four terminal tests
 * that wait for the progress line to count a session done.
 */
export const RUNNER_ONLY_VARS = ["CI", "NO_COLOR", "FORCE_COLOR", "COLUMNS"];

/** `env` without {@link RUNNER_ONLY_VARS}. */
export function withoutRunnerVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !RUNNER_ONLY_VARS.includes(k)));
}
