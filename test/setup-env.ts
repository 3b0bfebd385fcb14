// vitest setupFiles: every test file starts without the runner's own CI, colour and width
// variables (runner-env.ts); child processes inherit what is left.
import { RUNNER_ONLY_VARS } from "./runner-env.js";

for (const name of RUNNER_ONLY_VARS) delete process.env[name];
