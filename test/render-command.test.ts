/**
 * `condense render`: the formats (transcript, --format json, --stats, --json), diagnostics on
 * stderr, and --dry-run writing nothing.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { renderBranch } from "../src/render/render.js";
import { loadSession } from "../src/session/session.js";
import { fixture, runCli, tempDir, writeSession } from "./render-support.js";

describe("condense render", () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir("render-cmd")));
  afterEach(() => tmp.cleanup());

  it("--format json prints exactly the message array the provider would receive", async () => {
    const file = fixture("failed-write-30kb-args");
    const r = await runCli(["render", file, "--format", "json"]);
    expect(r.code).toBe(0);
    const session = await loadSession(file);
    expect(r.stdout).toBe(`${JSON.stringify(renderBranch(session.branch, defaultConfig()).after, null, 2)}\n`);
    expect(r.stderr).toBe("");
  });

  it("shows diagnostics on stderr (not with --quiet), the transcript on stdout", async () => {
    const file = fixture("tool-result-without-call");
    const r = await runCli(["render", file]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith("#1 user\nHello.\n\n#2 assistant anthropic/claude-sonnet-4-5\nHi! What should I do?\n\n#3 user\nList the files.\n")).toBe(true);
    expect(r.stdout).not.toContain("ghost_7");
    expect(r.stderr).toBe(
      "warning: diagnostic orphan-sweep: removed 1 tool result(s) Pi would otherwise send: ghost_7 (no call with this id in the assistant message before it)\n",
    );
    expect((await runCli(["render", file, "--quiet"])).stderr).toBe("");
  });

  it("--json holds messages, sizes after projection and after each phase, and diagnostics", async () => {
    const file = fixture("custom-message-between-call-and-result");
    const doc = JSON.parse((await runCli(["render", file, "--json"])).stdout);
    const session = await loadSession(file);
    const rendered = renderBranch(session.branch, defaultConfig());
    expect(doc.messages).toEqual(rendered.after);
    // Pi's count per message (context/size.ts): user "Read the config." 16 chars → 4 tokens;
    // assistant "read" + {"path":"config.json"} 26 → 7; the custom message 47 → 12; the result
    // { "port": 8080 } 16 → 4; "The port is 8080." 17 → 5. The orphan sweep removes the result.
    const all = { messages: 5, chars: 122, tokens: 32 };
    expect(doc.stats).toEqual([
      { phase: "projection", ...all },
      { phase: "stub-replace", ...all },
      { phase: "error-purge", ...all },
      { phase: "chain-range-prune", ...all },
      { phase: "orphan-sweep", messages: 4, chars: 106, tokens: 28 },
    ]);
    // What Pi sends now and after a run (nothing to capture here): the same numbers.
    expect(doc.context).toEqual({ before: { messages: 4, chars: 106, tokens: 28 }, after: { messages: 4, chars: 106, tokens: 28 } });
    expect(doc.diagnostics).toEqual([
      {
        kind: "orphan-sweep",
        detail:
          'removed 1 tool result(s) Pi would otherwise send: read_1 (its call was closed by a custom message "file-watcher" in between; pi-ai answers the call with "No result provided")',
        dedupKey: "9c95df0a86875da9",
      },
    ]);
  });

  it("--stats prints the context now → after run, then a table of chars and ~tokens per phase", async () => {
    const r = await runCli(["render", fixture("failed-write-30kb-args"), "--stats"]);
    expect(r.stdout.split("\n").slice(0, 3)).toEqual([
      "0f000006 2026-01-01 Write the generated constants to src/gen.ts.",
      fixture("failed-write-30kb-args"),
      "context Pi sends (with pi-condense): 76 ~tokens now → 76 after `condense run` (0%)",
    ]);
    const rows = r.stdout
      .split("\n")
      .filter((l) => /^│ \S/.test(l))
      .map((l) =>
        l
          .split("│")
          .slice(1, -1)
          .map((c) => c.trim()),
      );
    expect(rows).toEqual([
      ["after", "messages", "chars", "~tokens", "change"],
      ["projection", "6", "34,371", "8,595", ""],
      ["stub-replace", "6", "34,371", "8,595", "0"],
      // 34,124 chars of arguments replaced by the 51-char marker; the change is in tokens
      ["error-purge", "6", "298", "76", "−8,519"],
      ["chain-range-prune", "6", "298", "76", "0"],
      ["orphan-sweep", "6", "298", "76", "0"],
    ]);
  });

  it("--stats --format json (and --stats --json) prints the sizes as JSON", async () => {
    const r = await runCli(["render", fixture("failed-write-30kb-args"), "--stats", "--format", "json"]);
    const doc = JSON.parse(r.stdout);
    expect(Object.keys(doc)).toEqual(["session", "label", "dryRun", "as", "context", "stats"]);
    expect(doc.context.before).toEqual({ messages: 6, chars: 298, tokens: 76 });
    expect(doc.stats.map((x: { phase: string; tokens: number }) => [x.phase, x.tokens])).toEqual([
      ["projection", 8595],
      ["stub-replace", 8595],
      ["error-purge", 76],
      ["chain-range-prune", 76],
      ["orphan-sweep", 76],
    ]);
    // --json with --stats: the same sizes document, byte for byte (not the whole render of --json alone).
    const json = await runCli(["render", fixture("failed-write-30kb-args"), "--stats", "--json"]);
    expect([json.code, json.stdout]).toEqual([0, r.stdout]);
    const whole = await runCli(["render", fixture("failed-write-30kb-args"), "--json"]);
    expect(Object.keys(JSON.parse(whole.stdout))).toEqual(["session", "label", "dryRun", "as", "target", "context", "messages", "stats", "diagnostics"]);
  });

  it("--dry-run renders the session as run would leave it and writes nothing", async () => {
    const file = path.join(tmp.dir, "dry.jsonl");
    const output = Array.from({ length: 100 }, (_, i) => `entry ${i}: ok`).join("\n");
    writeSession(file, [output]);
    const bytes = readFileSync(file);
    const plain = JSON.parse((await runCli(["render", file, "--format", "json"])).stdout);
    expect(plain[2].content).toEqual([{ type: "text", text: output }]);
    const r = await runCli(["render", file, "--dry-run", "--format", "json"], { CONDENSE_NOW: "2026-02-01T00:00:00.000Z" });
    expect(r.code).toBe(0);
    const after = JSON.parse(r.stdout);
    expect(after.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant", "user"]);
    expect(after[2]).toEqual({
      role: "toolResult",
      toolCallId: "bash_0",
      toolName: "bash",
      content: [{ type: "text", text: "[Summarized in pruner summary, ref `t1`. Use context_tree_query to retrieve full output.]" }],
      isError: false,
      timestamp: 1767225603000,
    });
    expect(after[4].content[0].text).toMatch(/^- `t1` bash `cat log0.txt`/);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(readdirSync(tmp.dir)).toEqual(["dry.jsonl"]);
  });
});
