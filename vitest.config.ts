import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The runner's CI, colour and width variables are not passed on to the tests (runner-env.ts).
    setupFiles: ["test/setup-env.ts"],
    env: {
      // Inside Pi, its bash tool names the current session in PI_SESSION_FILE; tests pick their own.
      PI_SESSION_FILE: "",
      // Pi's agent folder for every test (tests that need another set their own): the pi-condense
      // extension installed and switched on, nothing else — never the developer's real ~/.pi/agent.
      // So `run --target auto` writes for the extension here; native-mode tests ask for `--target pi`.
      PI_CODING_AGENT_DIR: fileURLToPath(new URL("./test/pi-agent", import.meta.url)),
      // No summary cache unless a test asks for one (with its own CONDENSE_CACHE_DIR): tests count
      // model requests, and the developer's cache folder is never touched.
      CONDENSE_CACHE: "off",
    },
  },
});
