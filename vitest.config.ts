import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Inside Pi, its bash tool names the current session in PI_SESSION_FILE; tests pick their own.
    env: { PI_SESSION_FILE: "" },
  },
});
