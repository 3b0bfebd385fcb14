/**
 * The terminal the tmux tests type into is a user's: the CI runner's own `CI` (with which ora draws
 * no progress line: a CI run once failed the four "Ctrl-C once a session is done" tests, as the
 * progress line never counted one), its colour overrides and its COLUMNS do not reach the command.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RUNNER_ONLY_VARS } from "./runner-env.js";
import { hasTmux, startInTty } from "./tty-support.js";

// Set (after setup-env.ts took the runner's away) before this file's first tmux call starts the
// server (one server per test process).
for (const name of RUNNER_ONLY_VARS) process.env[name] = "1";
const dir = mkdtempSync(path.join(os.tmpdir(), "condense-tty-env-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!hasTmux)("a terminal of tty-support", () => {
  it("does not pass on CI, NO_COLOR, FORCE_COLOR and COLUMNS; TERM is the terminal's", async () => {
    const printed = RUNNER_ONLY_VARS.map((v) => `${v}=\${${v}-unset}`).join(" ");
    const run = startInTty("env", dir, ["sh", "-c", `echo "${printed} TERM=$TERM"`]);
    try {
      expect(await run.exited()).toBe(0);
      const line = run
        .screen()
        .split("\n")
        .find((l) => l.startsWith("CI="));
      expect(line).toMatch(/^CI=unset NO_COLOR=unset FORCE_COLOR=unset COLUMNS=unset TERM=(screen|tmux)/);
    } finally {
      run.kill();
    }
  });
});
