/**
 * Control sequences stored in a session never reach a terminal raw (issue "Crash-proof"): on a
 * TTY, unless `--raw`, every control character in printed text is escaped — window titles, clear
 * screen, OSC 52 clipboard writes, OSC 8 links, 8-bit CSI, bidi overrides — while condense's own
 * colours stay; `--json` on a TTY stays the same JSON value; pipes get the stored bytes exactly.
 * Checked on the Output class and under a real pseudo-terminal (`script`), for render, query,
 * metrics and budget, with colours off and on.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { escapeControls, escapeJsonForTerminal, Output } from "../src/cli/output.js";
import { runCli } from "./cli-capture.js";
import { makeTempDir } from "./helpers.js";
import { buildForChildren } from "./fault/support.js";

const EVIL = "A\x1b]0;PWNED\x07B\x1b[2JC\x1b]52;c;ZXZpbA==\x07D\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\E\x9b31mF\u202eG\x7fH\rI\x1b[31mJ\x00K\x08L";
const ESCAPED = "A\\e]0;PWNED\\aB\\e[2JC\\e]52;c;ZXZpbA==\\aD\\e]8;;http://x\\e\\link\\e]8;;\\e\\E\\u009b31mF\\u202eG\\u007fH\\rI\\e[31mJ\\0K\\bL";

/** A writable that records what it gets. */
function sink(isTTY: boolean): { stream: NodeJS.WritableStream & { isTTY?: boolean }; text: () => string } {
  let out = "";
  const write = (chunk: string): boolean => {
    out += chunk;
    return true;
  };
  const stream = { isTTY, write } as unknown as NodeJS.WritableStream & { isTTY?: boolean };
  return { stream, text: () => out };
}

const SGR = new RegExp(`^${String.fromCharCode(0x1b)}\\[[0-9;]*m`);
const ALL_SGR = new RegExp(`${String.fromCharCode(0x1b)}\\[[0-9;]*m`, "g");

/** Raw control characters a terminal would act on (CR only as part of CRLF; ESC only in SGR when `sgrAllowed`). */
function rawControls(text: string, sgrAllowed: boolean): string[] {
  const found: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x1b && sgrAllowed) {
      const m = SGR.exec(text.slice(i));
      if (m) {
        i += m[0].length - 1;
        continue;
      }
    }
    const control =
      (c < 0x20 && c !== 0x09 && c !== 0x0a && !(c === 0x0d && text.charCodeAt(i + 1) === 0x0a)) ||
      (c >= 0x7f && c <= 0x9f) ||
      (c >= 0x202a && c <= 0x202e) ||
      (c >= 0x2066 && c <= 0x2069) ||
      c === 0x2028 ||
      c === 0x2029;
    if (control) found.push(`${i}:${c.toString(16)}`);
  }
  return found;
}

describe("escaping", () => {
  it("escapeControls names the common ones and shows the rest as \\uXXXX; tab, newline and CRLF stay", () => {
    expect(escapeControls(EVIL)).toBe(ESCAPED);
    expect(escapeControls("a\tb\nc\r\nd\u2028")).toBe("a\tb\nc\r\nd\\u2028");
  });

  it("JSON for a terminal parses to the identical value", () => {
    const value = { text: EVIL, more: "\u0085\u2066x\u2029" };
    const json = escapeJsonForTerminal(JSON.stringify(value));
    expect(rawControls(json, false)).toEqual([]);
    expect(JSON.parse(json)).toEqual(value);
  });

  it("Output escapes stored text on a TTY, keeps its own colours, and leaves pipes and --raw exact", () => {
    const saved = process.env.FORCE_COLOR;
    process.env.FORCE_COLOR = "1";
    try {
      const tty = sink(true);
      const out = new Output({}, tty.stream, sink(true).stream);
      out.print(`${out.c.bold(EVIL)} ${EVIL}`);
      expect(tty.text()).toBe(`\x1b[1m${ESCAPED}\x1b[22m ${ESCAPED}\n`);
      expect(rawControls(tty.text(), true)).toEqual([]);
      const pipe = sink(false);
      new Output({}, pipe.stream, sink(false).stream).print(EVIL);
      expect(pipe.text()).toBe(`${EVIL}\n`);
      const raw = sink(true);
      new Output({ raw: true }, raw.stream, sink(true).stream).print(EVIL);
      expect(raw.text()).toBe(`${EVIL}\n`);
      const err = sink(true);
      new Output({}, sink(false).stream, err.stream).warn(EVIL);
      expect(err.text()).toBe(`\x1b[33mwarning:\x1b[39m ${ESCAPED}\n`);
    } finally {
      if (saved === undefined) delete process.env.FORCE_COLOR;
      else process.env.FORCE_COLOR = saved;
    }
  });

  it("tables: a hostile cell is escaped before the layout, so the columns still line up", () => {
    const tty = sink(true);
    const out = new Output({}, tty.stream, sink(true).stream);
    out.print(
      out.table(
        ["name", "n"],
        [
          ["a\x1b[2Jb", 1],
          ["plain", 22],
        ],
      ),
    );
    const rows = tty
      .text()
      .split("\n")
      .filter((l) => l.includes("│"));
    expect(new Set(rows.map((r) => r.replace(ALL_SGR, "").length)).size).toBe(1);
    expect(tty.text()).toContain("a\\e[2Jb");
  });
});

describe("under a pseudo-terminal", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let build: ReturnType<typeof buildForChildren>;
  let file: string;

  beforeAll(async () => {
    tmp = makeTempDir("pty");
    build = buildForChildren("pty");
    const dir = path.join(tmp.dir, `evil\x1b]0;title\x07dir`);
    mkdirSync(dir);
    file = path.join(dir, `s\x1b[2J\u202e.jsonl`);
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const lines: unknown[] = [
      { type: "session", version: 3, id: "e0000000-0000-7000-8000-00000000000e", timestamp: "2026-01-01T00:00:00.000Z", cwd: `/home/${EVIL}` },
    ];
    let parentId: string | null = null;
    let n = 0;
    const add = (message: Record<string, unknown>) => {
      const id = `e${String(++n).padStart(7, "0")}`;
      lines.push({ type: "message", id, parentId, timestamp: "2026-01-01T00:00:01.000Z", message });
      parentId = id;
    };
    const meta = { api: "anthropic-messages", provider: `p${EVIL}`, model: `m${EVIL}`, usage };
    add({ role: "user", content: `please ${EVIL}`, timestamp: 1767225601000 });
    for (let i = 0; i < 3; i++) {
      add({
        role: "assistant",
        content: [
          { type: "text", text: EVIL },
          { type: "toolCall", id: `call_${i}`, name: `bash${EVIL}`, arguments: { command: EVIL } },
        ],
        ...meta,
        stopReason: "toolUse",
        timestamp: 1767225602000 + i * 10,
      });
      add({
        role: "toolResult",
        toolCallId: `call_${i}`,
        toolName: `bash${EVIL}`,
        content: [{ type: "text", text: `${EVIL}\n`.repeat(i === 0 ? 4000 : 60) }],
        isError: false,
        timestamp: 1767225603000 + i * 10,
      });
    }
    add({ role: "assistant", content: [{ type: "text", text: `done ${EVIL}` }], ...meta, stopReason: "stop", timestamp: 1767225609000 });
    writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    // Prune it (no terminal involved), so query has spilled and summarized records to print.
    expect((await runCli("run", file, "--quiet", "--set", "spillThreshold=10000")).code).toBe(0);
  }, 60_000);

  afterAll(() => {
    tmp?.cleanup();
    build?.cleanup();
  });

  /** Run condense under `script` (a real pty on stdout and stderr); returns everything the terminal got. */
  function onTerminal(args: string, env: Record<string, string>): string {
    const r = spawnSync("script", ["-qec", `"$CONDENSE_NODE" "$CONDENSE_BIN" ${args}`, "/dev/null"], {
      env: { ...process.env, CONDENSE_NODE: process.execPath, CONDENSE_BIN: build.bin, SESSION: file, TERM: "xterm", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.error).toBeUndefined();
    return r.stdout;
  }

  const commands = [
    'render "$SESSION"',
    'query t1 t2 call_1 --session "$SESSION"',
    'query t1 --full --session "$SESSION"',
    'metrics "$SESSION"',
    'budget "$SESSION"',
    'render "$SESSION" --json',
    'query t1 --json --session "$SESSION"',
  ];
  for (const colours of ["NO_COLOR", "FORCE_COLOR"] as const) {
    it(`${colours}: no raw control sequence reaches the terminal from render, query, metrics, budget`, () => {
      const env: Record<string, string> = colours === "NO_COLOR" ? { NO_COLOR: "1" } : { FORCE_COLOR: "1" };
      const seen: Record<string, string[]> = {};
      for (const c of commands) {
        const text = onTerminal(c, env);
        if (!/metrics|budget/.test(c)) expect(text).toContain("PWNED"); // the stored text is shown — escaped
        seen[c] = rawControls(text, colours === "FORCE_COLOR");
      }
      expect(seen).toEqual(Object.fromEntries(commands.map((c) => [c, []])));
    }, 60_000);
  }

  it("--raw prints the stored bytes to the terminal as they are", () => {
    const text = onTerminal('query t2 --raw --session "$SESSION"', { NO_COLOR: "1" });
    expect(text).toContain("\x1b]0;PWNED\x07");
  });

  it("a pipe gets the stored bytes exactly", async () => {
    const r = await runCli("query", "t2", "--session", file);
    expect(r.stdout).toContain(EVIL);
  });
});
