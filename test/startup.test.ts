/**
 * Start-up (issue 18): only the command run is loaded; the others are registered from their
 * summaries (cli/command-list.ts). The top-level help built from the summaries alone is the help
 * of the complete program, and the command a command line runs is told apart from a session.
 */
import { describe, expect, it } from "vitest";
import { commandOf, buildProgram } from "../src/cli/main.js";
import { runCli } from "./cli-capture.js";

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
});
