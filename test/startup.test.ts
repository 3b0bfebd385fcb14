/**
 * Start-up (issue 18): only the command run is loaded; the others are registered from their
 * summaries (cli/command-list.ts). The top-level help built from the summaries alone is the help
 * of the complete program, and the command a command line runs is told apart from a session.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { commandOf, buildProgram } from "../src/cli/main.js";
import { tieringBudgetFlag } from "../src/cli/tiering.js";
import { runCli } from "./cli-capture.js";
import { REPO_ROOT } from "./helpers.js";

describe("start-up", () => {
  it("the top-level help from the summaries alone is the complete program's", async () => {
    const complete = await buildProgram({ code: 0 }, "all");
    const summaries = await buildProgram({ code: 0 }, []);
    expect(summaries.helpInformation()).toBe(complete.helpInformation());
    for (const name of ["render", "query", "completion"] as const) {
      const one = await buildProgram({ code: 0 }, [name]);
      expect(one.helpInformation(), name).toBe(complete.helpInformation());
      const command = (p: typeof one) => p.commands.find((c) => c.name() === name);
      expect(command(one)?.helpInformation(), name).toBe(command(complete)?.helpInformation());
    }
  });

  it("tells which command a command line runs", () => {
    expect(commandOf([])).toBe("run");
    expect(commandOf(["--help"])).toBeNull();
    expect(commandOf(["-V"])).toBeNull();
    expect(commandOf(["session.jsonl", "--dry-run"])).toBe("run");
    expect(commandOf(["--json", "metrics", "a/"])).toBe("metrics");
    expect(commandOf(["render", "--help"])).toBe("render");
    expect(commandOf(["install-skill"])).toBe("install-skill");
    expect(commandOf(["help", "render"])).toBe("all");
    expect(commandOf(["completion", "bash"])).toBe("all");
    expect(commandOf(["metric"])).toBe("run");
  });

  it("a mistyped command is still named as one", async () => {
    const r = await runCli("metric");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("did you mean `condense metrics`");
  });

  it("every command runs with V8's optimization put off (tiering.ts): ~16x later under V8 11, nothing set under other V8s", () => {
    expect(tieringBudgetFlag("11.3.244.8-node.33")).toBe("--interrupt-budget=1081344");
    expect(tieringBudgetFlag("12.4.254.21-node.33")).toBeUndefined();
    // At exit, after the command ran: calls of a fresh small function until TurboFan optimized it
    // (synchronous compiles, so the count is exact), beside the same count in a bare node — under
    // this Node and npm's (`npm test` runs the system Node, 20 here: V8 11; `npx vitest` Node 22).
    const preload = `data:text/javascript,${encodeURIComponent(`process.on("exit", () => {
      const f = new Function("xs", "let s = 0; for (const x of xs) s += x.length; return s;");
      let calls = 0;
      while (calls < 1e6) { f(["a", "bb", "ccc"]); calls++; if ((%GetOptimizationStatus(f) & 16) !== 0) break; }
      process.stderr.write(calls + " " + process.versions.v8);
    });`)}`;
    for (const node of new Set([process.execPath, process.env.npm_node_execpath ?? process.execPath])) {
      const count = (...args: string[]) => {
        const r = spawnSync(node, ["--allow-natives-syntax", "--no-concurrent-recompilation", "--import", preload, ...args], { encoding: "utf8" });
        const [calls, v8] = r.stderr.trim().split(" ");
        return { calls: Number(calls), v8 };
      };
      const bare = count("-e", "0");
      const cli = count(path.join(REPO_ROOT, "bin/condense.js"), "--version");
      expect(bare.calls, node).toBeGreaterThan(100);
      expect(bare.calls, node).toBeLessThan(1e6);
      if (Number.parseInt(bare.v8, 10) === 11) {
        expect(cli.calls / bare.calls, node).toBeGreaterThan(12);
        expect(cli.calls / bare.calls, node).toBeLessThan(20);
      } else expect(cli.calls, node).toBe(bare.calls);
    }
  });
});
