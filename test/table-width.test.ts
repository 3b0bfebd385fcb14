/**
 * Tables fit the terminal (docs/design.md §2): with 80 columns no table line of `run`, `metrics`,
 * `budget` or `compact` is wider than 80, over every shared session; the same under a real terminal (tmux)
 * at 80 and at 160 columns, where the wide layout appears, and compact's layouts at 80, 100, 120 and 160.
 */
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, utimesSync } from "node:fs";
import path from "node:path";
import stringWidth from "string-width";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fittedTable, outputWidth } from "../src/cli/table.js";
import { buildCli } from "./built-cli.js";
import { HEADERLESS_SHARED, sharedSessionFiles } from "./helpers.js";
import { copyInto, runCliWith, SHARED_SESSIONS, tempDir } from "./cli-capture.js";

const present = existsSync(SHARED_SESSIONS);
const files = sharedSessionFiles();
const widest = (text: string) => Math.max(...text.split("\n").map((l) => stringWidth(l)));
/** The lines of a cli-table3 table (its borders). */
const tableLines = (text: string) => text.split("\n").filter((l) => /^[┌│├└]/.test(l));
/** budget's turn table (from its head to the blank line after it) and chart (the lines with an axis). */
function budgetTable(text: string): string[] {
  const lines = text.split("\n");
  const head = lines.findIndex((l) => l.startsWith("turn "));
  const end = lines.indexOf("", head);
  return [...lines.slice(head, end), ...lines.filter((l) => /^\s*\S* [┤└]/.test(l))];
}

describe("fittedTable", () => {
  const layouts = [
    { columns: [{ head: "session", fit: true, minWidth: 10 }, { head: "a" }, { head: "b" }], rows: [["x".repeat(60), "1", "2"]] },
    { columns: [{ head: "session", fit: true, minWidth: 10 }, { head: "a" }], rows: [["x".repeat(60), "1"]] },
  ];
  it("prints the wide layout when it fits, cutting the session column", () => {
    const t = fittedTable(layouts, 120);
    expect(t.layout).toBe(0);
    expect(widest(t.text)).toBe(72); // 60 + 1 + 1 content, 3 × 2 padding, 4 borders
    expect(t.text).not.toContain("…");
    const narrow = fittedTable([{ ...layouts[0], rows: [["x".repeat(120), "1", "2"]] }, layouts[1]], 100);
    expect(narrow.layout).toBe(0);
    expect(widest(narrow.text)).toBe(100);
    expect(narrow.text).toContain("x…");
  });
  it("prints the compact layout below 100 columns, and cuts it to fit", () => {
    const t = fittedTable(layouts, 40);
    expect(t.layout).toBe(1);
    expect(widest(t.text)).toBe(40);
  });
  it("width: the terminal's, else COLUMNS, else no limit (piped output is not cut)", () => {
    expect(outputWidth({ isTTY: true, columns: 90 }, { COLUMNS: "70" })).toBe(90);
    expect(outputWidth({ isTTY: false }, { COLUMNS: "70" })).toBe(70);
    expect(outputWidth({}, { COLUMNS: "x" })).toBe(Number.POSITIVE_INFINITY);
    expect(fittedTable(layouts, Number.POSITIVE_INFINITY).text).toContain("x".repeat(60));
  });
});

describe.skipIf(!present)("at COLUMNS=80, over every shared session", () => {
  const tmp = tempDir("width");
  let copies: string[] = [];
  beforeAll(() => {
    copies = files.map((f) => copyInto(tmp.dir, path.join(SHARED_SESSIONS, f)));
  });
  afterAll(tmp.cleanup);
  const at80 = (...args: string[]) => runCliWith({ COLUMNS: "80" }, ...args, "--quiet");

  it("run --dry-run: no table line wider than 80", async () => {
    const r = await at80("run", tmp.dir, "--dry-run", "--migrate", "--jobs", "2");
    expect(tableLines(r.stdout).length).toBe(files.length - 1 + 4 + 1); // rows (gjc-01 refused), borders and head, totals
    expect(widest(tableLines(r.stdout).join("\n"))).toBeLessThanOrEqual(80);
    // Short numbers, but counts keep their thousands separators: the entries the total would add.
    const total = tableLines(r.stdout).find((l) => l.includes("total (")) ?? "";
    expect(total).toMatch(/│ +\d{1,3}\/\d{1,3}(,\d{3})+ │ .* │ +\(\d{1,3}(,\d{3})+\) │$/);
  });

  it("metrics: no table line wider than 80", async () => {
    const r = await at80("metrics", tmp.dir, "--jobs", "2");
    expect(tableLines(r.stdout).length).toBe(files.length - 1 + 4 + 1); // rows (gjc-01, which Pi cannot open, is a failure), borders and head, totals
    expect(widest(tableLines(r.stdout).join("\n"))).toBeLessThanOrEqual(80);
  });

  it("compact --dry-run: no table line wider than 80", async () => {
    const r = await at80("compact", tmp.dir, "--dry-run", "--migrate", "--jobs", "2");
    expect(tableLines(r.stdout).length).toBe(files.length - 1 + 4 + 0); // rows (gjc-01 refused), borders and head
    expect(widest(tableLines(r.stdout).join("\n"))).toBeLessThanOrEqual(80);
  });

  // gjc-01 has no header: budget fails on it (Pi cannot open it), so it has no table.
  it.each(files.filter((f) => f !== HEADERLESS_SHARED))("budget %s: no line of the table or the chart wider than 80", async (name) => {
    const r = await at80("budget", copies[files.indexOf(name)]);
    expect(r.code).toBe(0);
    const lines = budgetTable(r.stdout);
    if (!r.stdout.includes("no tool-using turns")) expect(lines.length).toBeGreaterThan(1);
    expect(widest(lines.join("\n"))).toBeLessThanOrEqual(80);
  });
});

// A tmux server of this file's own: another test file killing its last session stops the default server.
const SOCKET = `condense-width-${process.pid}`;
const tmux = (...args: string[]) => spawnSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
const hasTmux = tmux("-V").status === 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!hasTmux || !present)("in a real terminal (tmux) at 80 and 160 columns", () => {
  let cli: ReturnType<typeof buildCli>;
  const tmp = tempDir("width-tty");
  beforeAll(() => {
    cli = buildCli("table-width");
    // The sessions `run` takes without --migrate (v3 with a header).
    for (const f of files)
      if (!f.includes(".v1.") && !f.startsWith("handmade") && !f.startsWith("gjc-01"))
        utimesSync(copyInto(tmp.dir, path.join(SHARED_SESSIONS, f)), new Date("2025-01-01"), new Date("2025-01-01"));
  }, 120_000);
  afterAll(() => {
    tmux("kill-server");
    cli?.cleanup();
    tmp.cleanup();
  });

  /** Run a command in a detached tmux window of `columns` × 200 and return what it printed (as the terminal holds it). */
  async function inTerminal(columns: number, args: string): Promise<string> {
    const name = `condense-width-${process.pid}-${columns}`;
    const out = path.join(tmp.dir, `screen-${columns}.txt`);
    rmSync(out, { force: true });
    // COLUMNS unset: the width must come from the terminal itself. The output goes through the
    // terminal (a TTY stdout); `tee`-less, it is captured from the pane after the command ends.
    // Colours on at 160 columns (bold heads, dim legends: escape sequences the layout must not count), off at 80.
    const colour = columns >= 100 ? "FORCE_COLOR=1" : "NO_COLOR=1";
    const script = `unset COLUMNS NO_COLOR FORCE_COLOR; env PI_CODING_AGENT_DIR=${tmp.dir} ${colour} ${process.execPath} ${cli.bin} ${args} --quiet; echo "--EXIT=$?--"; sleep 300`;
    // A server that just exited with its last session may still hold the socket: try again briefly.
    let started = tmux("new-session", "-d", "-s", name, "-x", String(columns), "-y", "200", "sh", "-c", script);
    for (let i = 0; i < 5 && started.status !== 0; i++) {
      await sleep(200);
      started = tmux("new-session", "-d", "-s", name, "-x", String(columns), "-y", "200", "sh", "-c", script);
    }
    expect(started.status, started.stderr).toBe(0);
    try {
      const until = Date.now() + 120_000;
      let screen = "";
      while (Date.now() < until) {
        screen = tmux("capture-pane", "-p", "-J", "-S", "-", "-t", name).stdout;
        if (screen.includes("--EXIT=")) break;
        await sleep(100);
      }
      expect(screen).toContain("--EXIT=0--");
      return screen;
    } finally {
      tmux("kill-session", "-t", name);
    }
  }

  it.each([80, 160])(
    "run and metrics at %i columns fit, compact below 100",
    async (columns) => {
      for (const command of [`run ${tmp.dir} --dry-run`, `metrics ${tmp.dir}`]) {
        const screen = await inTerminal(columns, command);
        const lines = tableLines(screen);
        expect(lines.length).toBeGreaterThan(5);
        expect(widest(lines.join("\n"))).toBeLessThanOrEqual(columns);
        // The compact layout leaves out the wide-only columns.
        expect(lines[1].includes(command.startsWith("run") ? "spilled" : "open think")).toBe(columns >= 100);
      }
    },
    300_000,
  );

  it.each([
    [80, ["session", "Pi", "context ~tokens", "result"]],
    [100, ["session", "Pi", "first kept entry", "context ~tokens", "result"]],
    [120, ["session", "Pi", "first kept entry", "context ~tokens", "result"]],
    [160, ["session", "Pi would compact", "first kept entry", "summarized msgs", "files r/m", "context ~tokens", "result"]],
  ])(
    "compact --dry-run at %i columns: the widest layout that fits; where Pi would cut stays in view from 100 columns",
    async (columns, heads) => {
      const screen = await inTerminal(columns, `compact ${path.join(tmp.dir, "kimchi-session.v3.jsonl")} --dry-run`);
      const lines = tableLines(screen);
      expect(lines[1].split("│").map((c) => c.trim())).toEqual(["", ...heads, ""]);
      expect(widest(lines.join("\n"))).toBeLessThanOrEqual(columns);
      // The cut: kimchi's first kept entry, a split turn.
      if (columns >= 100) expect(lines[3]).toContain("eadd2f57 (line 96), split turn");
    },
    150_000,
  );

  it("budget's table and chart at 80 columns fit", async () => {
    const screen = await inTerminal(80, `budget ${path.join(tmp.dir, "kimchi-session.v3.jsonl")} --context-window 200k`);
    expect(widest(budgetTable(screen).join("\n"))).toBeLessThanOrEqual(80);
    expect(screen).toContain("context Pi sends (stock Pi):");
  }, 150_000);
});
