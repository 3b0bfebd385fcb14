/**
 * Archives across machines (issue 18): `--shard K/N` splits the files stably by path, `--ndjson`
 * prints one line per session, and `metrics --merge` of the shards' lines prints the document one
 * run over the whole archive prints — byte for byte, in every output form. Also: `run` over several
 * sessions in worker threads prints what one thread prints (built CLI).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseShard, selectShard, shardOfKey } from "../src/cli/shard.js";
import { buildCli } from "./built-cli.js";
import { runCliWith, SHARED_SESSIONS, tempDir } from "./cli-capture.js";
import { sharedSessionFiles } from "./helpers.js";

const NOW = "2026-03-01T00:00:00.000Z";

/** An archive in Pi's layout: every shared session in one of three project folders, plus a file no command can read. */
function makeArchive(root: string): string[] {
  const files: string[] = [];
  sharedSessionFiles().forEach((name, i) => {
    const folder = path.join(root, ["--home-a--", "--home-b--", "--srv-c--"][i % 3]);
    mkdirSync(folder, { recursive: true });
    const dest = path.join(folder, name);
    copyFileSync(path.join(SHARED_SESSIONS, name), dest);
    files.push(dest);
  });
  const bad = path.join(root, "--home-a--", "zz-not-a-session.jsonl");
  writeFileSync(bad, "not json at all\n");
  return [...files, bad];
}

describe("--shard K/N: a stable partition by path", () => {
  it("reads K/N and refuses anything else, naming the flag", () => {
    expect(parseShard("2/8")).toEqual({ index: 2, count: 8 });
    expect(parseShard(" 1 / 1 ")).toEqual({ index: 1, count: 1 });
    for (const bad of ["0/4", "5/4", "2", "a/b", "1/0", "-1/4", "1.5/4"]) expect(() => parseShard(bad), bad).toThrow(/--shard: expected K\/N/);
  });

  it("puts every file in exactly one shard, the same wherever the archive is mounted", () => {
    const names = Array.from({ length: 200 }, (_, i) => `--proj-${i % 7}--/2026-01-0${(i % 9) + 1}_${String(i).padStart(4, "0")}.jsonl`);
    const at = (root: string) => names.map((n) => path.join(root, n));
    for (const count of [1, 2, 3, 8]) {
      const seen = new Map<string, number>();
      for (let k = 1; k <= count; k++) {
        const here = selectShard(at("/mnt/archive"), { index: k, count });
        const there = selectShard(at("/data/other/place"), { index: k, count });
        expect(there.positions).toEqual(here.positions);
        for (const p of here.positions) seen.set(names[p], (seen.get(names[p]) ?? 0) + 1);
      }
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(seen.size).toBe(names.length);
    }
    // Roughly even: no shard of 8 holds more than twice its share of 200 files.
    const sizes = Array.from({ length: 8 }, (_, k) => selectShard(at("/x"), { index: k + 1, count: 8 }).files.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(50);
  });

  it("keeps a file in its shard when other files come and go", () => {
    const name = "2026-01-01T10-00-00-000Z_0199c0de-0000-7000-8000-00000000abcd.jsonl";
    const shard = { index: shardOfKey(name, 4), count: 4 };
    const before = selectShard(["/a/--proj--/x.jsonl", `/a/--proj--/${name}`], shard);
    const after = selectShard(["/a/--proj--/x.jsonl", "/a/--proj--/y.jsonl", "/a/--other--/z.jsonl", `/a/--proj--/${name}`], shard);
    expect(before.files).toContain(`/a/--proj--/${name}`);
    expect(after.files).toContain(`/a/--proj--/${name}`);
  });
});

describe("--ndjson and metrics --merge", () => {
  const tmp = tempDir("shard");
  // One Pi folder for every run: each session's target names its settings file.
  const pi = tempDir("shard-pi");
  const runCli = (...args: string[]) => runCliWith({ PI_CODING_AGENT_DIR: pi.dir }, ...args);
  let files: string[] = [];
  beforeAll(() => {
    files = makeArchive(tmp.dir);
  });
  afterAll(() => {
    tmp.cleanup();
    pi.cleanup();
  });

  const shardsOf = async (command: string, count: number, extra: string[] = []) => {
    const parts: string[] = [];
    for (let k = 1; k <= count; k++) {
      const r = await runCli(command, tmp.dir, "--shard", `${k}/${count}`, "--ndjson", ...extra);
      expect(r.code === 0 || r.code === 1, r.stderr).toBe(true);
      const file = path.join(tmp.dir, `..${path.basename(tmp.dir)}-${command}-${k}.ndjson`);
      writeFileSync(file, r.stdout);
      parts.push(file);
    }
    return parts;
  };

  it("4 shards merged print exactly what one run prints (--json, the table, stderr, exit code)", async () => {
    const parts = await shardsOf("metrics", 4);
    const lines = parts.flatMap((p) => readLines(p));
    expect(lines).toHaveLength(files.length);
    expect(lines.map((l) => l.index).sort((a, b) => a - b)).toEqual(files.map((_, i) => i));
    for (const form of [["--json"], [], ["--max-context", "5k"]]) {
      const whole = await runCli("metrics", tmp.dir, ...form);
      const merged = await runCli("metrics", "--merge", ...parts, ...form);
      expect(merged.stdout, form.join(" ")).toBe(whole.stdout);
      expect(merged.stderr, form.join(" ")).toBe(whole.stderr);
      expect(merged.code, form.join(" ")).toBe(whole.code);
    }
  });

  it("each line is one session's result or failure, as --json lists them", async () => {
    const doc = JSON.parse((await runCli("metrics", tmp.dir, "--json")).stdout);
    const lines = readLines((await shardsOf("metrics", 1))[0]);
    expect(lines.every((l) => l.schema === "condense.metrics/2" && l.of === files.length)).toBe(true);
    const results = lines.filter((l) => l.result).sort((a, b) => a.index - b.index);
    expect(results.map((l) => l.result)).toEqual(doc.sessions);
    const failures = lines
      .filter((l) => l.failure)
      .sort((a, b) => a.index - b.index)
      .map((l) => ({ session: l.failure?.session, error: l.failure?.error }));
    expect(failures).toEqual(doc.failures);
    // What a single run of that file exits with: 2, the file is no session.
    expect(lines.find((l) => l.failure?.session.endsWith("zz-not-a-session.jsonl"))?.failure?.exitCode).toBe(2);
  });

  it("run and compact print one line per session too", async () => {
    for (const [command, schema, extra] of [
      ["run", "condense.run/1", ["--dry-run"]],
      ["compact", "condense.compact/2", ["--dry-run"]],
    ] as const) {
      const r = await runCliWith({ CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: pi.dir }, command, tmp.dir, "--ndjson", "--migrate", ...extra);
      const lines = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines, command).toHaveLength(files.length);
      expect(
        lines.every((l) => l.schema === schema),
        command,
      ).toBe(true);
      const doc = JSON.parse((await runCliWith({ CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: pi.dir }, command, tmp.dir, "--json", "--migrate", ...extra)).stdout);
      const results = lines.filter((l) => l.result).sort((a, b) => a.index - b.index);
      expect(results.map((l) => l.result.session)).toEqual(doc.sessions.map((s: { session: string }) => s.session));
    }
  });

  it("refuses a merge with a shard missing or given twice, or lines of another kind", async () => {
    const parts = await shardsOf("metrics", 3);
    const missing = await runCli("metrics", "--merge", parts[0], parts[2]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--merge: \d+ of \d+ sessions are missing .*is a shard missing or unfinished\?/);
    const twice = await runCli("metrics", "--merge", ...parts, parts[1]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/appears twice \(a shard given twice\?\)/);
    const runLines = await shardsOf("run", 1, ["--dry-run"]);
    const other = await runCli("metrics", "--merge", runLines[0]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('not a line of condense.metrics/2 (got "condense.run/1")');
    expect((await runCli("metrics", tmp.dir, "--ndjson", "--json")).code).toBe(2);
    // A line of the same schema without a field the merge reads (another version's): named, no crash.
    const lines = readFileSync(parts[0], "utf8").trim().split("\n");
    const at = lines.findIndex((l) => JSON.parse(l).result !== undefined);
    const line = JSON.parse(lines[at]);
    delete line.result.target;
    lines[at] = JSON.stringify(line);
    const old = path.join(tmp.dir, "..", `${path.basename(tmp.dir)}-old.ndjson`);
    writeFileSync(old, `${lines.join("\n")}\n`);
    const lacking = await runCli("metrics", "--merge", old, parts[1], parts[2]);
    expect(lacking.code).toBe(2);
    expect(lacking.stderr).toBe(
      `error: ${old}:${at + 1}: the result has no target.used (written by another version of condense? run that shard again with this one)\n`,
    );
    rmSync(old);
  });

  it("refuses a merge of files that hold no line (every shard died before its first): exit 2, not a green gate", async () => {
    const empties = [1, 2].map((k) => path.join(tmp.dir, "..", `${path.basename(tmp.dir)}-empty-${k}.ndjson`));
    for (const file of empties) writeFileSync(file, "");
    const both = await runCli("metrics", "--merge", ...empties, "--max-context", "1", "--fail-on-diagnostics");
    expect([both.code, both.stdout, both.stderr]).toEqual([
      2,
      "",
      "error: --merge: none of the 2 files holds a session's line (all are empty): did every shard fail or not finish?\n",
    ]);
    const one = await runCli("metrics", "--merge", empties[0], "--json");
    expect(one.code).toBe(2);
    expect(JSON.parse(one.stdout)).toEqual({
      error: { message: "--merge: the file holds no session's line (it is empty): did the shard fail or not finish?", exitCode: 2 },
    });
    for (const file of empties) rmSync(file);
  });
});

describe("run over several sessions in worker threads (built CLI)", () => {
  const tmp = tempDir("shard-pool");
  const pi = tempDir("shard-pool-pi");
  let files: string[] = [];
  let bin = "";
  let cleanup = () => {};
  beforeAll(() => {
    files = makeArchive(tmp.dir);
    ({ bin, cleanup } = buildCli("shard"));
  }, 120_000);
  afterAll(() => {
    cleanup();
    tmp.cleanup();
    pi.cleanup();
  });

  const env = { ...process.env, PI_CODING_AGENT_DIR: pi.dir, NO_COLOR: "1", CONDENSE_NOW: NOW };
  const run = (jobs: string, ...extra: string[]) => {
    const r = spawnSync(process.execPath, [bin, "run", tmp.dir, "--json", "--migrate", "--jobs", jobs, ...extra], {
      encoding: "utf8",
      env,
      maxBuffer: 64 << 20,
    });
    return { code: r.status, stdout: r.stdout.replace(/"wallMs": \d+/g, '"wallMs": 0'), stderr: r.stderr };
  };

  it("prints the same report and warnings, in the same order, with --jobs 2 as with --jobs 1, for each target", () => {
    // The default target (auto: no pi-condense in Pi's settings, so native mode) and the extension's.
    for (const [target, used] of [
      [[], "pi"],
      [["--target", "extension"], "extension"],
    ] as const) {
      const one = run("1", "--dry-run", ...target);
      const two = run("2", "--dry-run", ...target);
      expect(one.code, used).toBe(1);
      expect(two, used).toEqual(one);
      const sessions: { target: { used: string }; contextEdits?: unknown }[] = JSON.parse(one.stdout).sessions;
      expect(sessions.length, used).toBeGreaterThan(10);
      expect(new Set(sessions.map((x) => x.target.used)), used).toEqual(new Set([used]));
    }
  });

  it("appends the same bytes to every session with --jobs 2 as with --jobs 1 (native mode)", () => {
    const originals = files.map((f) => readFileSync(f));
    const written = (jobs: string) => {
      // A fresh archive each time (migration backups and sidecars of the other run gone).
      rmSync(tmp.dir, { recursive: true, force: true });
      makeArchive(tmp.dir);
      const r = run(jobs);
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout).sessions.filter((x: { target: { used: string } }) => x.target.used === "pi").length).toBeGreaterThan(10);
      return { report: r, bytes: files.map((f) => readFileSync(f, "utf8")) };
    };
    const one = written("1");
    const two = written("2");
    expect(two.report).toEqual(one.report);
    for (const [i, f] of files.entries()) expect(two.bytes[i], f).toBe(one.bytes[i]);
    // Something was written, context edits among it.
    expect(one.bytes.filter((b, i) => b.length > originals[i].length).length).toBeGreaterThan(5);
    expect(one.bytes.some((b) => b.includes('"type":"context_edit"'))).toBe(true);
  });
});

type Line = { schema: string; index: number; of: number; result?: Record<string, unknown>; failure?: { session: string; error: string; exitCode: number } };

function readLines(file: string): Line[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);
}
