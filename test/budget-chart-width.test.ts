/**
 * `condense budget`'s chart fits the terminal (issue 20): every line of it — axis labels, bars,
 * marks — within the terminal's columns, or `COLUMNS` when stdout is not a terminal; checked
 * through the command with COLUMNS, and in a real 80-column terminal (tmux). The drawing itself:
 * budget.test.ts.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { runCli } from "./cli-harness.js";
import { makeTempDir, SHARED_SESSIONS } from "./helpers.js";

const LONG = path.join(SHARED_SESSIONS, "pimono-before-compaction.migrated-v3.jsonl");

/** The chart's lines in the command's output: from the legend to the end. */
function chartOf(stdout: string): string[] {
  const lines = stdout.trimEnd().split("\n");
  const legend = lines.findIndex((l) => l.startsWith("B budget, D delta"));
  expect(legend).toBeGreaterThan(0);
  return lines.slice(legend + 1);
}

describe("the chart's width", () => {
  it("COLUMNS=80 and COLUMNS=40 when stdout is not a terminal; without COLUMNS nothing is narrowed (at most 80 bars)", async () => {
    const charts = new Map<string, string[]>();
    for (const columns of ["80", "40", "200", undefined]) {
      const r = await runCli(["budget", LONG], { COLUMNS: columns, NO_COLOR: "1" });
      expect(r.code).toBe(0);
      const chart = chartOf(r.stdout);
      expect(chart.length).toBeGreaterThanOrEqual(10);
      charts.set(String(columns), chart);
      const axis = chart.find((l) => l.includes("└")) ?? "";
      const bars = axis.length - axis.indexOf("└") - 1;
      expect(bars).toBeLessThanOrEqual(80);
      if (columns === undefined || columns === "200") continue;
      expect(Math.max(...chart.map((l) => l.length))).toBeLessThanOrEqual(Number(columns));
      expect(axis.length).toBeGreaterThan(Number(columns) - 8);
    }
    expect(charts.get("undefined")).toEqual(charts.get("200"));
  });
});

const tmux = (...args: string[]) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
const socket = `condense-chart-${process.pid}`;
const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

describe.skipIf(!hasTmux)("in an 80-column terminal", () => {
  let cli: ReturnType<typeof buildCli>;
  const tmp = makeTempDir("chart-tty");
  beforeAll(() => {
    cli = buildCli("chart-tty");
  }, 120_000);
  afterAll(() => {
    tmux("kill-server");
    cli?.cleanup();
    tmp.cleanup();
  });

  it("every line of the chart fits: nothing wraps", async () => {
    const done = path.join(tmp.dir, "done");
    // COLUMNS is unset: the width must come from the terminal itself.
    const script = `unset COLUMNS; ${process.execPath} ${cli.bin} budget ${LONG}; echo done > ${done}; sleep 60`;
    expect(tmux("new-session", "-d", "-s", "chart", "-x", "80", "-y", "50", "env", `PI_CODING_AGENT_DIR=${tmp.dir}`, "sh", "-c", script).status).toBe(0);
    const until = Date.now() + 30_000;
    while (!existsSync(done) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(readFileSync(done, "utf8")).toBe("done\n");
    // -J joins lines the terminal wrapped, so a line longer than the terminal shows whole.
    const screen = tmux("capture-pane", "-p", "-J", "-t", "chart", "-S", "-60").stdout;
    const chart = chartOf(screen);
    expect(chart.filter((l) => l.includes("┤")).length).toBe(8);
    expect(Math.max(...chart.map((l) => l.length))).toBeLessThanOrEqual(80);
    expect(chart.find((l) => l.includes("└"))?.length).toBeGreaterThan(72);
  });
});
