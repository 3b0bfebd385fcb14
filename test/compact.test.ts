/**
 * `condense compact` on small fixtures: the exact entry appended (zero-model summary included),
 * --dry-run, --output, --json, archives with a failing file, --if-over against Pi's trigger,
 * Pi's settings (global, project, model overrides, flags), --instructions, refusals; and the
 * zero-model summary's rules and bounds on hand-made messages.
 */
import { mkdirSync, readFileSync, realpathSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localSummary } from "../src/compact/local-summary.js";
import { compactionSettings, DEFAULT_COMPACTION_SETTINGS } from "../src/compact/settings.js";
import { readPiSettings } from "../src/config/pi-settings.js";
import type { AgentMessage } from "../src/session/types.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, makeTempDir } from "./helpers.js";

const NOW = "2026-02-01T00:00:00.000Z";
const temps: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of temps.splice(0)) cleanup();
});

function temp(): string {
  const { dir, cleanup } = makeTempDir("compact");
  temps.push(cleanup);
  return dir;
}

/** `condense compact ...` with a fixed clock, no colors and its own (empty unless written) Pi folder. */
async function compact(args: string[], piDir = temp(), env: Record<string, string> = {}) {
  return runCli(["compact", ...args], { PI_CODING_AGENT_DIR: piDir, NO_COLOR: "1", CONDENSE_NOW: NOW, ...env });
}

const fixture = (name: string) => path.join(FIXTURES, name);
const copy = (name: string, dir = temp()) => copyInto(dir, fixture(name));
const lastLine = (file: string) => JSON.parse(readFileSync(file, "utf8").trimEnd().split("\n").pop()!);

const EXAMPLE_SUMMARY = `## Goal
- The test for deleting keys fails in kvstore. Find out why and fix it.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] The test for deleting keys fails in kvstore. Find out why and fix it. — Fixed: \`KvStore.delete\` now writes the file when it removed a key (\`src/store.ts\`). All 3 tests pass.
- [x] Modified \`src/store.ts\` (1 edit)
- [x] Ran \`npm test\` → exit 0

### In Progress
- [ ] (the request in the turn context below)

### Blocked
- (none)

## Key Decisions
- **Changed \`src/store.ts\`**: \`delete\` removes the key in memory but never calls \`flush()\`, so the file keeps the old value. Fixing it.

## Next Steps
1. Continue the request described in the turn context below
2. Read the messages kept after this summary: they continue the work verbatim

## Critical Context
- Summarized without a model by condense from the session itself: 11 messages, 1 user request, 5 tool calls (1 failed), 2026-01-01T10:00:02.000Z to 2026-01-01T10:00:13.000Z
- Working directory: \`/home/dev/kvstore\`; model: anthropic/claude-sonnet-4-5
- Commands run (last 2 of 2):
  - \`npm test\` → exit 1
  - \`npm test\` → exit 0
- Last assistant reply before the cut:
  > Fixed: \`KvStore.delete\` now writes the file when it removed a key (\`src/store.ts\`). All 3 tests pass.

---

**Turn Context (split turn):**

## Original Request
Also add a \`clear()\` method that empties the store, with a test.

## Progress So Far
- Read \`src/store.ts\`
- 1 tool call (0 failed)

## Context Needed to Continue
- Last assistant text in this part of the turn:
  > Reading the store again before editing.

<read-files>
test/store.test.ts
</read-files>

<modified-files>
src/store.ts
</modified-files>`;

describe("compact: what it appends", () => {
  it("appends exactly one Pi-native compaction entry after the leaf (fixed clock: exact bytes)", async () => {
    const file = copy("example-session.jsonl");
    const before = readFileSync(file);
    const r = await compact([file, "--keep-recent-tokens", "400", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const expected = {
      type: "compaction",
      id: "26e2a0a2",
      parentId: "33110a9e",
      timestamp: NOW,
      summary: EXAMPLE_SUMMARY,
      firstKeptEntryId: "013d3825",
      tokensBefore: 7950,
      details: { readFiles: ["test/store.test.ts"], modifiedFiles: ["src/store.ts"] },
      fromHook: false,
    };
    const after = readFileSync(file);
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    expect(after.subarray(before.length).toString("utf8")).toBe(`${JSON.stringify(expected)}\n`);
    const doc = JSON.parse(r.stdout);
    expect(doc.failures).toEqual([]);
    expect(doc.sessions[0]).toMatchObject({
      session: file,
      status: "compacted",
      summarizer: "deterministic",
      model: "anthropic/claude-sonnet-4-5",
      settings: { enabled: true, reserveTokens: 16384, keepRecentTokens: 400 },
      contextWindow: 200000,
      contextWindowFrom: "registry",
      trigger: { piWouldCompact: false, reason: null, level: 183616, contextTokens: 7950 },
      firstKeptEntryId: "013d3825",
      firstKeptLine: 17,
      isSplitTurn: true,
      messagesToSummarize: 11,
      turnPrefixMessages: 3,
      previousSummary: false,
      readFiles: ["test/store.test.ts"],
      modifiedFiles: ["src/store.ts"],
      tokensBefore: 7950,
      // Pi's trigger compares its usage-based estimate (the provider counted the system prompt and tools too) …
      piEstimate: { before: 7950, after: 684 },
      // … the report shows what Pi sends, measured as every command measures it (context/size.ts).
      context: { before: { messages: 20, chars: 5671, tokens: 1427 }, after: { messages: 7, chars: 2725, tokens: 684 } },
      fits: true,
      summaryChars: EXAMPLE_SUMMARY.length,
      usage: null,
      entryId: "26e2a0a2",
      dryRun: false,
      written: file,
      bytesAppended: after.length - before.length,
    });
  });

  it("--dry-run writes nothing and reports the same; --output writes a copy and leaves the input alone", async () => {
    const dir = temp();
    const file = copy("example-session.jsonl", dir);
    const original = readFileSync(file);
    const mtime = statSync(file).mtimeMs;
    const dry = await compact([file, "--keep-recent-tokens", "400", "--dry-run", "--json"]);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).sessions[0]).toMatchObject({ status: "compacted", dryRun: true, written: null, bytesAppended: 0, entryId: "26e2a0a2" });
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(mtime);

    const output = path.join(dir, "compacted.jsonl");
    const out = await compact([file, "--keep-recent-tokens", "400", "--output", output]);
    expect(out.code, out.stderr).toBe(0);
    expect(readFileSync(file).equals(original)).toBe(true);
    const written = readFileSync(output);
    expect(written.subarray(0, original.length).equals(original)).toBe(true);
    expect(lastLine(output)).toMatchObject({ type: "compaction", id: "26e2a0a2", parentId: "33110a9e" });
    expect(out.stdout).toContain(`wrote ${output}`);
    // An existing --output needs --force; the input itself is refused.
    expect((await compact([file, "--output", output])).stderr).toContain("already exists; use --force");
    const self = await compact([file, "--output", file]);
    expect(self.code).toBe(2);
    expect(self.stderr).toContain("is the input session itself");
  });

  it("a human report names the cut, the files and the context before → after", async () => {
    const r = await compact([copy("example-session.jsonl"), "--keep-recent-tokens", "400"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /│ 0199c0de 2026-01-01 The test for deleting keys fails in kvstore\. Find out why and fix it\. │ no\s+│ 013d3825 \(line 17\), split turn\s+│\s+11 \+ 3 │\s+1\/1 │\s+1,427 → 684 \(-52%\) │ compacted/,
    );
    expect(r.stdout).toContain("keepRecentTokens 400, reserveTokens 16,384");
  });

  it("a session whose branch ends in a compaction is already compacted; a small one has nothing to compact (exit 0, nothing written)", async () => {
    const small = copy("example-session.jsonl");
    const before = readFileSync(small);
    const r = await compact([small, "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).sessions[0]).toMatchObject({ status: "nothing-to-compact", reason: "Nothing to compact (session too small)", entryId: null });
    expect(readFileSync(small).equals(before)).toBe(true);
    const human = await compact([small]);
    expect(human.stdout).toContain(`${small}: Nothing to compact (session too small)`);
  });

  it("--instructions focus the summary and are stored on the entry", async () => {
    const file = copy("example-session.jsonl");
    const r = await compact([file, "--keep-recent-tokens", "400", "--instructions", "keep the exact test names"]);
    expect(r.code, r.stderr).toBe(0);
    const entry = lastLine(file);
    expect(entry.customInstructions).toBe("keep the exact test names");
    expect(Object.keys(entry).pop()).toBe("customInstructions");
    expect(entry.summary).toContain("## Constraints & Preferences\n- **Focus requested for this summary**: keep the exact test names\n");
    expect(entry.summary).toContain(
      "## Original Request\nAlso add a `clear()` method that empties the store, with a test.\n\nFocus requested for this summary: keep the exact test names",
    );
    expect((await compact([file, "--instructions", " "])).code).toBe(2);
  });

  it("a previous compaction: the new summary carries it forward and the file lists accumulate", async () => {
    const file = copy("compact-after-compaction.jsonl");
    const r = await compact([file, "--keep-recent-tokens", "500", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const entry = lastLine(file);
    // src/date.ts and src/commands/add.ts are known only from the previous compaction's details.
    expect(entry.details).toEqual({ readFiles: ["src/cli.ts", "src/commands/add.ts"], modifiedFiles: ["src/commands/list.ts", "src/date.ts", "src/store.ts"] });
    expect(entry.summary).toContain("- Earlier: Add a `--due DATE` option to `todo add`");
    expect(entry.summary).toContain("- Earlier summary (previous compaction, shortened):\n  > ## Goal\n  > - Add a `--due DATE` option to `todo add`");
    expect(entry.summary).toContain(
      "- [x] Now list overdue todos first in `todo list`, and show them in red. — Overdue todos now come first, in red. 14 tests pass.",
    );
    expect(entry.summary).toContain("- [x] Ran `git status --short` → exit 0");
    // The system messages' replay, stamped with the entry's time, as Pi's appendCompaction stores it.
    expect(entry.systemMessage).toEqual({
      role: "system",
      content: "You are an expert coding assistant.",
      sections: { cwd: "<cwd>/home/dev/todo-cli</cwd>" },
      timestamp: Date.parse(NOW),
    });
  });
});

describe("compact: archives, --jobs, failures", () => {
  it("one failing file never stops the others (exit 1, the others written)", async () => {
    const dir = temp();
    const a = copy("example-session.jsonl", dir);
    const b = copyInto(dir, fixture("compact-after-compaction.jsonl"));
    const bad = copyInto(dir, fixture("bad-no-header.jsonl"));
    const badBefore = readFileSync(bad);
    const r = await compact([dir, "--keep-recent-tokens", "400", "--jobs", "2", "--json"]);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.sessions.map((s: any) => [path.basename(s.session), s.status, s.written !== null])).toEqual([
      ["compact-after-compaction.jsonl", "compacted", true],
      ["example-session.jsonl", "compacted", true],
    ]);
    expect(doc.failures).toHaveLength(1);
    expect(doc.failures[0].session).toBe(bad);
    expect(doc.failures[0].error).toContain("bad-no-header.jsonl");
    expect(readFileSync(bad).equals(badBefore)).toBe(true);
    expect(lastLine(a).type).toBe("compaction");
    expect(lastLine(b).type).toBe("compaction");
  });

  it("a single unusable file is exit 2; a v1 session needs --migrate (as run): in memory, to a v3 --output, or in place after a backup", async () => {
    const bad = await compact([copy("bad-not-jsonl.jsonl")]);
    expect(bad.code).toBe(2);
    const v1 = copy("v1-with-compaction.jsonl");
    const before = readFileSync(v1);
    for (const args of [[], ["--dry-run"]]) {
      const refused = await compact([v1, "--keep-recent-tokens", "0", ...args]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        args.length === 0
          ? "a v1 session; Pi rewrites such files as v3 when it opens them. Run with --migrate to back it up and rewrite it as v3 first (nothing was written)."
          : "a v1 session; Pi rewrites such files as v3 when it opens them. Add --migrate to read it as Pi does (this run still writes nothing; a real run with --migrate backs it up and rewrites it as v3 first).",
      );
      expect(readFileSync(v1).equals(before)).toBe(true);
    }
    const dry = await compact([v1, "--keep-recent-tokens", "0", "--migrate", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout).sessions[0]).toMatchObject({ status: "compacted", migratedFrom: 1, written: null });
    expect(readFileSync(v1).equals(before)).toBe(true);
    const output = path.join(temp(), "v3.jsonl");
    const out = await compact([v1, "--keep-recent-tokens", "0", "--migrate", "--output", output]);
    expect(out.code, out.stderr).toBe(0);
    expect(readFileSync(v1).equals(before)).toBe(true);
    // The output holds the v3 rewrite of the input (not its bytes) and the compaction entry.
    const v3Bytes = Buffer.byteLength(readFileSync(output, "utf8").trimEnd().split("\n").slice(0, -1).join("\n")) + 1;
    const added = statSync(output).size - v3Bytes;
    expect(out.stdout.trimEnd().split("\n").pop()).toBe(
      `wrote ${output}: the v3 rewrite of ${v1} + 1 entry (+${added.toLocaleString("en-US")} bytes); ${v1} is untouched`,
    );
    const lines = readFileSync(output, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "session", version: 3 });
    expect(lines[lines.length - 1]).toMatchObject({ type: "compaction", parentId: lines[lines.length - 2].id });
    // In place: the original bytes kept as <file>.v1.bak, the file rewritten as v3 and compacted —
    // the same bytes as the --output copy (same clock, same ids).
    const inPlace = await compact([v1, "--keep-recent-tokens", "0", "--migrate", "--json"]);
    expect(inPlace.code, inPlace.stderr).toBe(0);
    expect(JSON.parse(inPlace.stdout).sessions[0]).toMatchObject({ status: "compacted", migratedFrom: 1, backup: `${v1}.v1.bak`, written: v1 });
    expect(readFileSync(`${v1}.v1.bak`).equals(before)).toBe(true);
    expect(readFileSync(v1).equals(readFileSync(output))).toBe(true);
  });

  it("refuses a session whose last tool calls may be running right now, unless --force", async () => {
    const file = path.join(temp(), "live.jsonl");
    const lines = readFileSync(fixture("example-session.jsonl"), "utf8").trimEnd().split("\n");
    // Cut after an assistant message that calls a tool (line 14: the read of src/store.ts), just written.
    writeFileSync(file, `${lines.slice(0, 15).join("\n")}\n`);
    const r = await compact([file, "--keep-recent-tokens", "100"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("still without a result");
    const forced = await compact([file, "--keep-recent-tokens", "100", "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    // An old file is not live.
    const old = path.join(temp(), "old.jsonl");
    writeFileSync(old, `${lines.slice(0, 15).join("\n")}\n`);
    utimesSync(old, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
    expect((await compact([old, "--keep-recent-tokens", "100"])).code).toBe(0);
  });
});

describe("compact --if-over: Pi's own trigger or a fraction of the window", () => {
  it("below Pi's trigger (7,950 ≤ 200,000 − 16,384): nothing written; over it with a smaller window: compacted", async () => {
    const file = copy("example-session.jsonl");
    const before = readFileSync(file);
    const below = await compact([file, "--keep-recent-tokens", "400", "--if-over", "--json"]);
    expect(below.code).toBe(0);
    expect(JSON.parse(below.stdout).sessions[0]).toMatchObject({
      status: "below-trigger",
      reason: "Pi's estimate 7,950 tokens ≤ 183,616 (window − reserveTokens)",
      trigger: { piWouldCompact: false, level: 183616 },
      entryId: null,
      firstKeptEntryId: "013d3825",
    });
    expect(readFileSync(file).equals(before)).toBe(true);
    // 7,950 > 20,000 − 16,384 = 3,616.
    const over = await compact([file, "--keep-recent-tokens", "400", "--if-over", "--context-window", "20000", "--json"]);
    expect(JSON.parse(over.stdout).sessions[0]).toMatchObject({
      status: "compacted",
      contextWindowFrom: "override",
      trigger: { piWouldCompact: true, reason: "threshold", level: 3616 },
    });
    expect(lastLine(file).type).toBe("compaction");
  });

  it("a fraction: 7,950 ≤ 0.5 × 20,000 is below, 7,950 > 0.3 × 20,000 is over; the session may come before or after the flag", async () => {
    const half = await compact([
      "--if-over",
      "0.5",
      copy("example-session.jsonl"),
      "--keep-recent-tokens",
      "400",
      "--context-window",
      "20000",
      "--dry-run",
      "--json",
    ]);
    expect(JSON.parse(half.stdout).sessions[0]).toMatchObject({ status: "below-trigger", reason: "Pi's estimate 7,950 tokens ≤ 10,000 (0.5 × window)" });
    const third = await compact([
      copy("example-session.jsonl"),
      "--keep-recent-tokens",
      "400",
      "--context-window",
      "20000",
      "--dry-run",
      "--json",
      "--if-over",
      "0.3",
    ]);
    expect(JSON.parse(third.stdout).sessions[0].status).toBe("compacted");
    // `--if-over FILE`: the file is a session, not a fraction.
    const bare = await compact(["--if-over", copy("example-session.jsonl"), "--dry-run", "--json"]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(JSON.parse(bare.stdout).sessions[0].status).toBe("nothing-to-compact");
    // A share is a fraction in (0, 1] or a percentage (README "Units"): 30% is 0.3.
    const percent = await compact([
      copy("example-session.jsonl"),
      "--keep-recent-tokens",
      "0.4k",
      "--context-window",
      "20k",
      "--dry-run",
      "--json",
      "--if-over=30%",
    ]);
    expect(JSON.parse(percent.stdout).sessions[0].status).toBe("compacted");
    for (const [bad, message] of [
      ["0", '--if-over: expected a fraction above 0 and at most 1 (0.8) or a percentage (80%), got "0"'],
      ["1.5", "--if-over: a bare number is a fraction above 0 and at most 1; for 1.5 percent write 1.5% (or 0.015)"],
      ["-0.2", '--if-over: expected a fraction above 0 and at most 1 (0.8) or a percentage (80%), got "-0.2"'],
    ]) {
      const r = await compact([copy("example-session.jsonl"), `--if-over=${bad}`]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });

  it("with auto-compaction off Pi never compacts on its own; an unknown window cannot be judged", async () => {
    const off = await compact([
      copy("example-session.jsonl"),
      "--keep-recent-tokens",
      "400",
      "--context-window",
      "20000",
      "--compaction-enabled",
      "false",
      "--if-over",
      "--json",
    ]);
    expect(JSON.parse(off.stdout).sessions[0]).toMatchObject({
      status: "below-trigger",
      reason: "auto-compaction is off (compaction.enabled: false), so Pi would not compact it",
      trigger: { piWouldCompact: false },
    });
    const file = path.join(temp(), "unknown-model.jsonl");
    writeFileSync(file, readFileSync(fixture("example-session.jsonl"), "utf8").replaceAll("claude-sonnet-4-5", "claude-from-the-future"));
    const unknown = await compact([file, "--keep-recent-tokens", "400", "--if-over", "--json"]);
    expect(JSON.parse(unknown.stdout).sessions[0]).toMatchObject({ status: "unknown-window", contextWindow: null, trigger: { piWouldCompact: null } });
  });

  it("an overflow error at the end is Pi's trigger whatever the size (the rescue fixture)", async () => {
    const r = await compact([copy("compact-overflow-rescue.jsonl"), "--if-over", "--dry-run", "--json"]);
    expect(JSON.parse(r.stdout).sessions[0]).toMatchObject({ status: "compacted", trigger: { piWouldCompact: true, reason: "overflow" }, fits: true });
  });
});

describe("compact: Pi's settings", () => {
  function session(dir: string, cwd: string): string {
    const file = path.join(dir, "s.jsonl");
    writeFileSync(file, readFileSync(fixture("example-session.jsonl"), "utf8").replace('"cwd":"/home/dev/kvstore"', `"cwd":${JSON.stringify(cwd)}`));
    return file;
  }
  const kept = async (file: string, piDir: string, ...args: string[]) => {
    const r = await compact([file, "--dry-run", "--json", ...args], piDir);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout).sessions[0];
  };

  it("global settings.json, then the project's .pi/settings.json over it (a trusted project, as Pi), then the flags", async () => {
    const piDir = temp();
    const project = temp();
    const file = session(temp(), project);
    writeFileSync(path.join(piDir, "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 400, reserveTokens: 1000 } }));
    let r = await kept(file, piDir);
    expect([r.firstKeptEntryId, r.settings]).toEqual(["013d3825", { enabled: true, reserveTokens: 1000, keepRecentTokens: 400 }]);
    expect(r.settingsFiles).toEqual([path.join(piDir, "settings.json")]);
    mkdirSync(path.join(project, ".pi"));
    writeFileSync(path.join(project, ".pi", "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 100 } }));
    // Without a trust decision Pi (without a terminal to ask) ignores the project's settings.
    r = await kept(file, piDir);
    expect([r.firstKeptEntryId, r.settings.keepRecentTokens]).toEqual(["013d3825", 400]);
    expect(r.settingsFiles).toEqual([path.join(piDir, "settings.json")]);
    writeFileSync(path.join(piDir, "trust.json"), JSON.stringify({ [realpathSync(project)]: true }));
    r = await kept(file, piDir);
    expect([r.firstKeptEntryId, r.settings]).toEqual(["33110a9e", { enabled: true, reserveTokens: 1000, keepRecentTokens: 100 }]);
    expect(r.settingsFiles).toEqual([path.join(piDir, "settings.json"), path.join(project, ".pi", "settings.json")]);
    r = await kept(file, piDir, "--keep-recent-tokens", "400", "--reserve-tokens", "2000");
    expect([r.firstKeptEntryId, r.settings.reserveTokens]).toEqual(["013d3825", 2000]);
  });

  it("a model override wins for the session's model; invalid values are usage errors naming the file", async () => {
    const piDir = temp();
    const file = session(temp(), temp());
    writeFileSync(
      path.join(piDir, "settings.json"),
      JSON.stringify({
        compaction: {
          keepRecentTokens: 5000,
          modelOverrides: { "anthropic/claude-sonnet-4-5": { keepRecentTokens: 400 }, "openai/gpt-5": { keepRecentTokens: 1 } },
        },
      }),
    );
    expect((await kept(file, piDir)).settings.keepRecentTokens).toBe(400);
    writeFileSync(path.join(piDir, "settings.json"), JSON.stringify({ compaction: { reserveTokens: -5 } }));
    const r = await compact([file, "--dry-run"], piDir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${path.join(piDir, "settings.json")}: invalid compaction.reserveTokens -5: expected a non-negative integer (tokens)`);
    const flag = await compact([file, "--keep-recent-tokens", "lots"], piDir);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--keep-recent-tokens: expected a token count such as 120000, 120k or 1.2M, got "lots"');
  });

  it("reads and merges like Pi's SettingsManager (nested objects merged, the rest replaced, broken files reported)", () => {
    const piDir = temp();
    const project = temp();
    writeFileSync(path.join(piDir, "settings.json"), JSON.stringify({ compaction: { enabled: false, reserveTokens: 9 }, theme: "dark", list: [1, 2] }));
    mkdirSync(path.join(project, ".pi"));
    writeFileSync(path.join(project, ".pi", "settings.json"), JSON.stringify({ compaction: { reserveTokens: 7 }, list: [3] }));
    writeFileSync(path.join(piDir, "trust.json"), JSON.stringify({ [realpathSync(project)]: true }));
    const s = readPiSettings({ cwd: project, agentDir: piDir });
    expect(s.merged).toEqual({ compaction: { enabled: false, reserveTokens: 7 }, theme: "dark", list: [3] });
    expect(s.projectLoaded).toBe(true);
    expect(s.errors).toEqual([]);
    expect(compactionSettings(s.merged, null)).toEqual({ enabled: false, reserveTokens: 7, keepRecentTokens: 20000 });
    writeFileSync(path.join(project, ".pi", "settings.json"), "{ not json");
    const broken = readPiSettings({ cwd: project, agentDir: piDir });
    expect(broken.projectLoaded).toBe(false);
    expect(broken.merged.compaction).toEqual({ enabled: false, reserveTokens: 9 });
    expect(broken.errors.map((e) => e.path)).toEqual([path.join(project, ".pi", "settings.json")]);
    expect(DEFAULT_COMPACTION_SETTINGS).toEqual({ enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 });
  });
});

describe("the zero-model summary", () => {
  let t = 1_767_000_000_000;
  const tick = () => {
    t += 1000;
    return t;
  };
  const user = (text: string): AgentMessage => ({ role: "user", content: [{ type: "text", text }], timestamp: tick() });
  const assistant = (text: string, calls: { id: string; name: string; args: Record<string, unknown> }[] = []): AgentMessage =>
    ({
      role: "assistant",
      content: [...(text ? [{ type: "text", text }] : []), ...calls.map((c) => ({ type: "toolCall", id: c.id, name: c.name, arguments: c.args }))],
      stopReason: calls.length > 0 ? "toolUse" : "stop",
      timestamp: tick(),
    }) as AgentMessage;
  const result = (id: string, name: string, text: string, isError = false): AgentMessage =>
    ({ role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }], isError, timestamp: tick() }) as AgentMessage;

  it("done, in progress and blocked: a failure after the last success blocks; an earlier one was worked around", () => {
    const messages = [
      user("Make the build pass. Do not touch the public API."),
      assistant("", [{ id: "c1", name: "bash", args: { command: "npm run build" } }]),
      result("c1", "bash", "src/a.ts(3,1): error TS2304: Cannot find name 'x'.\n\nCommand exited with code 2", true),
      assistant("The root cause is a missing import, so adding it.", [{ id: "c2", name: "edit", args: { path: "src/a.ts", oldText: "a", newText: "b" } }]),
      result("c2", "edit", "Successfully replaced text in src/a.ts."),
      assistant("", [{ id: "c3", name: "bash", args: { command: "npm run build" } }]),
      result("c3", "bash", "built in 2s"),
      assistant("The build passes."),
      user("Now run the e2e tests."),
      assistant("", [{ id: "c4", name: "bash", args: { command: "npm run e2e" } }]),
      result("c4", "bash", "FAIL e2e/login.spec.ts\nTimeoutError: page.goto: Timeout 30000ms exceeded\n\nCommand exited with code 1", true),
    ];
    const text = localSummary({ messagesToSummarize: messages, turnPrefixMessages: [], isSplitTurn: false });
    expect(text).toContain("## Goal\n- Make the build pass. Do not touch the public API.\n- Latest request: Now run the e2e tests.\n");
    expect(text).toContain("## Constraints & Preferences\n- Do not touch the public API.\n");
    expect(text).toContain("- [x] Make the build pass. Do not touch the public API. — The build passes.\n");
    expect(text).toContain("- [x] Modified `src/a.ts` (1 edit)\n- [x] Ran `npm run build` → exit 0\n");
    expect(text).toContain("### In Progress\n- [ ] Now run the e2e tests.\n");
    // Only the e2e failure: the build failure before the successful build was worked around.
    expect(text).toContain("### Blocked\n- `npm run e2e` → exit 1: TimeoutError: page.goto: Timeout 30000ms exceeded\n\n## Key Decisions");
    expect(text).toContain("## Key Decisions\n- **Changed `src/a.ts`**: The root cause is a missing import, so adding it.\n");
    expect(text).toContain("## Next Steps\n1. Continue the request: Now run the e2e tests.\n2. Fix what made `npm run e2e` → exit 1 fail, then run it again\n");
    expect(text).toContain("  - `npm run build` → exit 2\n  - `npm run build` → exit 0\n  - `npm run e2e` → exit 1\n");
  });

  it("a condensed session: the <compressed-chain> block run put before a prompt is no request; a block alone is none", () => {
    const block =
      '<compressed-chain id="b1" tools="t1">\n- `t1` bash `npm test` — OK, 12 chars, 1 line\n\nFull output: `condense query t1` in bash (or context_tree_query).\n</compressed-chain>';
    const messages = [
      // As stock Pi's context edit carries it: the block first, then the user's own text.
      {
        role: "user",
        content: [
          { type: "text", text: block },
          { type: "text", text: "Make the build pass. Do not touch the public API." },
        ],
        timestamp: tick(),
      } as AgentMessage,
      assistant("The build passes."),
      user(block.replace(/b1/g, "b2")),
      user("Now run the e2e tests."),
    ];
    const text = localSummary({ messagesToSummarize: messages, turnPrefixMessages: [], isSplitTurn: false });
    expect(text).toContain("## Goal\n- Make the build pass. Do not touch the public API.\n- Latest request: Now run the e2e tests.\n");
    expect(text).toContain("## Constraints & Preferences\n- Do not touch the public API.\n");
    expect(text).not.toContain("compressed-chain");
    expect(text).not.toContain("condense query");
  });

  it("list items carry one marker: a line's own list marker is dropped, diagram lines are no items, only the last request is in progress", () => {
    const messages = [
      user("- should we remove apiKey and always use resolveApiKey?\n- for the example hook:\n  - keep the messages to summarize as a defensive copy"),
      assistant("- Yes: resolveApiKey everywhere.\n- The copy is defensive."),
      user("ass usr tool bash"),
      assistant("", [{ id: "d1", name: "edit", args: { path: "docs/hooks.md", oldText: "a", newText: "b" } }]),
      user("┌────┬─────┐\n│ usr │ ass │\n└────┴─────┘\n↑ firstKeptEntryIndex"),
      assistant("", [{ id: "d2", name: "read", args: { path: "docs/hooks.md" } }]),
      user("│ [system] [summary] [usr idx 6] │\n\nplease use the format we use for the diagrams above → with indices"),
      assistant("", [{ id: "d3", name: "read", args: { path: "docs/compaction.md" } }]),
    ];
    const text = localSummary({ messagesToSummarize: messages, turnPrefixMessages: [], isSplitTurn: false });
    expect(text).toContain(
      "## Goal\n- should we remove apiKey and always use resolveApiKey? for the example hook: keep the messages to summarize as a defensive copy\n" +
        "- Latest request: please use the format we use for the diagrams above → with indices\n",
    );
    expect(text).toContain("## Constraints & Preferences\n- should we remove apiKey and always use resolveApiKey?\n");
    expect(text).toContain(
      "### Done\n- [x] should we remove apiKey and always use resolveApiKey? for the example hook: keep the messages to summarize as a defensive copy — Yes: resolveApiKey everywhere. The copy is defensive.\n",
    );
    // An arrow inside a sentence is prose; a line of box drawing, or one led by an arrow, is a diagram.
    expect(text).toContain("### In Progress\n- [ ] please use the format we use for the diagrams above → with indices\n\n### Blocked");
    // Earlier unanswered requests are other requests; the diagram-only message is none.
    expect(text).toContain("- Other user requests (1, the last 1):\n  - ass usr tool bash\n");
    expect(text).not.toMatch(/^\s*- (\[[ x]\] )?[-*>]\s/m);
    expect(text).not.toMatch(/[│┌└↑]|firstKeptEntryIndex/);
  });

  it("stays bounded whatever the session's size", () => {
    const messages: AgentMessage[] = [];
    for (let i = 0; i < 2000; i++) {
      messages.push(user(`Request ${i}: ${"please make sure ".repeat(50)} ${"y".repeat(5000)}`));
      messages.push(assistant(`Working on ${i} because ${"z".repeat(3000)}`, [{ id: `w${i}`, name: "write", args: { path: `src/f${i}.ts`, content: "x" } }]));
      messages.push(result(`w${i}`, "write", "error: disk full ".repeat(200), true));
      messages.push(assistant(`Reply ${i} ${"r".repeat(4000)}`));
    }
    const text = localSummary({ messagesToSummarize: messages, turnPrefixMessages: [], isSplitTurn: false, previousSummary: "## Goal\n- old\n".repeat(2000) });
    expect(text.length).toBeLessThan(18_000);
    expect(text).toContain("- [x] … and 1975 more files (see <modified-files>)");
    expect(text).toContain("8000 messages, 2000 user requests, 2000 tool calls (2000 failed)");
  });

  it("a split turn with nothing before it: Pi's 'No prior history.' then the turn context", () => {
    const text = localSummary({
      messagesToSummarize: [],
      turnPrefixMessages: [
        user("Refactor the parser."),
        assistant("Reading it.", [{ id: "r1", name: "read", args: { path: "src/parser.ts" } }]),
        result("r1", "read", "code"),
      ],
      isSplitTurn: true,
    });
    expect(text).toBe(
      "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nRefactor the parser.\n\n## Progress So Far\n- Read `src/parser.ts`\n- 1 tool call (0 failed)\n\n" +
        "## Context Needed to Continue\n- Last assistant text in this part of the turn:\n  > Reading it.",
    );
  });
});
