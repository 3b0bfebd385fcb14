/**
 * `condense undo` (issue 16): after `run` and after `compact`, on every shared session, the file is
 * back to exactly its bytes before the write and the sidecars the write created are gone; each
 * undo removes one write, newest first. It refuses — and changes nothing — when something was
 * appended after condense's entries (Pi 1.6's own SessionManager appending), when condense's bytes
 * changed, when the file was replaced, when nothing is recorded, and while another process has the
 * session open (unless --force). An undo killed after its truncation is finished by the next one.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { undoPath } from "../src/session/journal.js";
import { undoRefusal } from "../src/pipeline/undo.js";
import { buildCli } from "./built-cli.js";
import { runCli } from "./cli-harness.js";
import { FIXTURES, importPiSessionManager, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

const tmp = makeTempDir("undo");
afterAll(tmp.cleanup);
const env = { PI_CODING_AGENT_DIR: tmp.dir, CONDENSE_NOW: "2026-03-01T12:00:00.000Z", NO_COLOR: "1" };
writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
// Small spill limits, so that runs write sidecars too.
const SPILL = ["--set", "spillThreshold=4096", "--set", "spillPreviewBytes=256"];

/** Every file below `dir` (relative paths), sorted. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

const shared = readdirSync(SHARED_SESSIONS).filter((f) => f.endsWith(".jsonl") && !f.startsWith("gjc-01")); // gjc-01: no header, never written

describe("undo after run and after compact restores the exact bytes on every shared session", () => {
  let withSidecars = 0;
  afterAll(() => {
    // The spill limits made some runs write sidecars, which undo removed.
    expect(withSidecars).toBeGreaterThan(0);
  });

  it.each(shared)("%s", async (name) => {
    const dir = path.join(tmp.dir, `all-${name}`);
    mkdirSync(dir);
    const file = path.join(dir, name);
    copyFileSync(path.join(SHARED_SESSIONS, name), file);
    const migrate = /\.v[12]\.jsonl$|^handmade-v2/.test(name) ? ["--migrate"] : [];
    // v1/v2: migrated in place first (compact --migrate with nothing to compact; the original goes
    // to the backup); undo then removes what run and compact append to the migrated text.
    if (migrate.length > 0) {
      const migrated = await runCli(["compact", file, "--migrate", "--keep-recent-tokens", "999999999"], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(readFileSync(`${file}.v${name.includes("v2") ? 2 : 1}.bak`).equals(readFileSync(path.join(SHARED_SESSIONS, name)))).toBe(true);
    }
    const original = readFileSync(file);
    const filesBefore = filesBelow(dir);

    const run = await runCli(["run", file, "--json", ...SPILL], env);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout).sessions[0];
    if (report.sidecars > 0) withSidecars++;
    const afterRun = readFileSync(file);
    const compact = await runCli(["compact", file, "--json", "--keep-recent-tokens", "2000"], env);
    expect(compact.code, compact.stderr).toBe(0);
    const compacted = JSON.parse(compact.stdout).sessions[0];

    // Newest first: the compaction, then the run.
    if (compacted.written) {
      const u = await runCli(["undo", file, "--json"], env);
      expect(u.code, u.stderr).toBe(0);
      expect(JSON.parse(u.stdout)).toMatchObject({ op: "compact", entries: 1, bytes: compacted.bytesAppended, sizeAfter: afterRun.length });
      expect(readFileSync(file).equals(afterRun)).toBe(true);
    }
    if (report.written) {
      const u = await runCli(["undo", file, "--json"], env);
      expect(u.code, u.stderr).toBe(0);
      const doc = JSON.parse(u.stdout);
      expect(doc).toMatchObject({ schema: "condense.undo/1", op: "run", entries: report.entriesAppended, bytes: report.bytesAppended, earlier: 0 });
      expect(doc.sidecars).toHaveLength(report.sidecars);
    }
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(filesBelow(dir)).toEqual(filesBefore);
    expect(existsSync(undoPath(file))).toBe(false);
    // Nothing left: a clear refusal, nothing changed.
    const none = await runCli(["undo", file], env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`${file}: no condense write to this session is recorded`);
    expect(readFileSync(file).equals(original)).toBe(true);
  });
});

describe("undo refuses, and changes nothing", () => {
  const SOURCE = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
  let n = 0;
  /** A copy, run once (with sidecars). */
  async function written(): Promise<{ file: string; original: Buffer; after: Buffer; entries: number }> {
    const file = path.join(tmp.dir, `r${n++}.jsonl`);
    copyFileSync(SOURCE, file);
    const original = readFileSync(file);
    const r = await runCli(["run", file, "--json", ...SPILL], env);
    expect(r.code).toBe(0);
    return { file, original, after: readFileSync(file), entries: JSON.parse(r.stdout).sessions[0].entriesAppended };
  }

  it("when the argument names several files (a folder): says how many it names", async () => {
    const dir = path.join(tmp.dir, "folder-of-three");
    mkdirSync(dir);
    for (const name of ["a.jsonl", "b.jsonl", "c.jsonl"]) copyFileSync(SOURCE, path.join(dir, name));
    for (const command of ["undo", "budget"]) {
      const r = await runCli([command, dir], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`error: ${command} takes one session; ${dir} names 3 files\n`);
    }
    const out = await runCli(["run", dir, "--output", path.join(tmp.dir, "three-out.jsonl")], env);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe("error: --output takes one session; the arguments name 3 files\n");
  });

  it("when Pi appended after condense's entries (Pi 1.6's SessionManager, from its stale leaf)", async () => {
    const Pi = await importPiSessionManager();
    const file = path.join(tmp.dir, `pi-${n++}.jsonl`);
    copyFileSync(SOURCE, file);
    const pi = Pi.SessionManager.open(file);
    const r = await runCli(["run", file, "--json"], env);
    expect(r.code).toBe(0);
    const entries = JSON.parse(r.stdout).sessions[0].entriesAppended as number;
    // kimchi-statusline for stock Pi: the extension's 56 entries, 48 context edits and the entry listing them.
    expect(entries).toBe(105);
    const size = readFileSync(file).length;
    pi.appendMessage({ role: "user", content: [{ type: "text", text: "go on" }], timestamp: Date.now() });
    const stamp = JSON.parse(readFileSync(file, "utf8").trimEnd().split("\n").pop() as string).timestamp as string;
    const before = readFileSync(file);
    const u = await runCli(["undo", file], env);
    expect(u.code).toBe(1);
    expect(u.stderr).toBe(
      `error: ${file}: cannot undo condense run of ${new Date(JSON.parse(readFileSync(undoPath(file), "utf8")).committedAt).toISOString().slice(0, 19).replace("T", " ")} UTC: ` +
        `1 entry (the first a message (user) entry, ${stamp.slice(0, 19).replace("T", " ")} UTC) was appended after its ${entries.toLocaleString("en-US")} entries (from byte ${size.toLocaleString("en-US")}), ` +
        "and undo only removes condense's own bytes at the end of the file; nothing was changed. If Pi wrote them from before condense's entries, those are already off Pi's branch (condense run applies them again)\n",
    );
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("after Pi appended between two writes: undo of the later one says no earlier write can be undone", async () => {
    const Pi = await importPiSessionManager();
    const file = path.join(tmp.dir, `pi-${n++}.jsonl`);
    copyFileSync(SOURCE, file);
    expect((await runCli(["run", file], env)).code).toBe(0);
    Pi.SessionManager.open(file).appendMessage({ role: "user", content: [{ type: "text", text: "go on" }], timestamp: Date.now() });
    const compact = await runCli(["compact", file, "--json", "--keep-recent-tokens", "2000"], env);
    expect(JSON.parse(compact.stdout).sessions[0].written).toBe(file);
    // Two writes are recorded, but Pi's message lies between them: the earlier one cannot be undone.
    expect(readFileSync(undoPath(file), "utf8").trimEnd().split("\n")).toHaveLength(2);
    const u = await runCli(["undo", file, "--json"], env);
    expect(u.code).toBe(0);
    expect(JSON.parse(u.stdout)).toMatchObject({ op: "compact", earlier: 0 });
    const later = await runCli(["undo", file], env);
    expect(later.code).toBe(1);
    expect(later.stderr).toMatch(
      new RegExp(
        `^error: ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: cannot undo condense run of .*: 1 entry \\(the first a message \\(user\\) entry, .*\\) was appended after its \\d+ entries`,
      ),
    );
  });

  it("when condense's bytes changed, when the file was replaced, while another process has it open (--force undoes)", async () => {
    const changed = await written();
    const bytes = Buffer.from(changed.after);
    bytes[changed.original.length + 10] ^= 0x20;
    writeFileSync(changed.file, bytes);
    const c = await runCli(["undo", changed.file], env);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/cannot undo condense run of .*: the bytes condense appended were changed since; nothing was changed\n$/);
    expect(readFileSync(changed.file).equals(bytes)).toBe(true);

    const replaced = await written();
    const copy = `${replaced.file}.copy`;
    copyFileSync(replaced.file, copy);
    renameSync(copy, replaced.file);
    const rp = await runCli(["undo", replaced.file], env);
    expect(rp.code).toBe(1);
    expect(rp.stderr).toContain("it is another file now (its inode changed); nothing was changed");

    const open = await written();
    const holder = spawnHolder(open.file);
    try {
      await holder.ready;
      const o = await runCli(["undo", open.file], env);
      expect(o.code).toBe(1);
      expect(o.stderr).toMatch(
        new RegExp(
          `it is open in another process \\(node, pid ${holder.pid}, .*\\); Pi may have read condense's entries, .*nothing was changed — exit Pi \\(or close the file\\) first, or pass --force`,
        ),
      );
      expect(readFileSync(open.file).equals(open.after)).toBe(true);
      // A dry run says what it would remove and warns of the real undo's refusal, as run --dry-run does.
      const ago = (text: string) => text.replace(/\d+ s ago/, "N s ago");
      const refusal = ago(o.stderr.replace(/^error: /, "").trimEnd());
      const warned = await runCli(["undo", open.file, "--dry-run"], env);
      expect([warned.code, ago(warned.stderr)]).toEqual([0, `warning: a real undo would refuse: ${refusal}\n`]);
      expect(warned.stdout).toMatch(new RegExp(`^would undo condense run of .* on ${open.file}: remove ${open.entries} entries \\(`));
      const warnedJson = await runCli(["undo", open.file, "--dry-run", "--json"], env);
      expect([warnedJson.code, ago(JSON.parse(warnedJson.stdout).wouldRefuse)]).toEqual([0, refusal]);
      const dry = await runCli(["undo", open.file, "--dry-run", "--force"], env);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toMatch(new RegExp(`^would undo condense run of .* on ${open.file}: remove ${open.entries} entries \\(`));
      expect(readFileSync(open.file).equals(open.after)).toBe(true);
      const forced = await runCli(["undo", open.file, "--force"], env);
      expect(forced.code).toBe(0);
      expect(forced.stdout).toMatch(new RegExp(`^undid condense run of .* on ${open.file}: removed ${open.entries} entries \\(`));
      expect(readFileSync(open.file).equals(open.original)).toBe(true);
    } finally {
      holder.kill("SIGKILL");
    }
  });
});

/**
 * A node process holding `file` open; `ready` settles once it has opened it (it says so on stdout).
 * Not a fixed wait: under load, node can take longer than any such wait to start.
 */
function spawnHolder(file: string) {
  const child = spawn(process.execPath, ["-e", `require("fs").openSync(${JSON.stringify(file)}, "r"); console.log("ready"); setInterval(() => {}, 1000);`], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("ready")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`the process holding ${file} exited (${code}) before it opened it`)));
  });
  return Object.assign(child, { ready });
}

describe("a condense killed at a fault point (CONDENSE_TEST_FAULT: the built CLI, built once)", () => {
  let cli: ReturnType<typeof buildCli>;
  beforeAll(() => {
    cli = buildCli("undo");
  }, 120_000);
  afterAll(() => cli?.cleanup());

  /** `condense <args>`, killed (SIGKILL) at `fault`. */
  function killedAt(fault: string, ...args: string[]): void {
    const killed = spawnSync(process.execPath, [cli.bin, ...args], { env: { ...process.env, ...env, CONDENSE_TEST_FAULT: fault }, encoding: "utf8" });
    expect(killed.signal).toBe("SIGKILL");
  }

  it("leaves the file undone and its record; the next undo finishes (sidecars and record gone)", async () => {
    const dir = path.join(tmp.dir, "killed");
    mkdirSync(dir);
    const file = path.join(dir, "k.jsonl");
    copyFileSync(path.join(SHARED_SESSIONS, "pimono-large-session.migrated-v3.jsonl"), file);
    const original = readFileSync(file);
    const r = await runCli(["run", file, "--json", ...SPILL], env);
    const sidecars = JSON.parse(r.stdout).sessions[0].sidecars;
    expect(sidecars).toBeGreaterThan(0);
    killedAt("step:undo-truncated", "undo", file);
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(existsSync(undoPath(file))).toBe(true);
    const dry = await runCli(["undo", file, "--dry-run"], env);
    expect([dry.code, dry.stderr]).toEqual([0, ""]);
    expect(dry.stdout).toMatch(
      /^would finish undoing condense run of .*: its [\d,]+ entries \(.*\) were already removed; its sidecar files and record would go\n$/,
    );
    const next = await runCli(["undo", file], env);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toMatch(
      /^finished undoing condense run of .*: its [\d,]+ entries \(.*\) were already removed; its sidecar files and record are gone now\n$/,
    );
    expect(filesBelow(dir)).toEqual(["k.jsonl"]);
  });

  // Undo with an interrupted write beside the session settles it first and says so.
  /** A copy of a shared session, then `condense run` on it killed at `fault`. */
  function interrupted(name: string, fault: string): { file: string; original: Buffer } {
    const dir = path.join(tmp.dir, name);
    mkdirSync(dir);
    const file = path.join(dir, "t.jsonl");
    copyFileSync(path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), file);
    const original = readFileSync(file);
    killedAt(fault, "run", file, "-q");
    return { file, original };
  }

  it("undo after a torn write rolls it back first; the refusal says that is all that changed", async () => {
    const { file, original } = interrupted("settle-torn", "append:5000");
    expect(statSync(file).size).toBe(original.length + 5000);
    const u = await runCli(["undo", file], env);
    expect([u.code, u.stdout, u.stderr]).toEqual([
      1,
      "",
      `error: ${file}: no condense write to this session is recorded; nothing else was changed ` +
        "(an interrupted condense run write was rolled back (5000 bytes removed); the file is as before it)\n",
    ]);
    expect(readFileSync(file).equals(original)).toBe(true);
  });

  it("undo after a complete write that was not confirmed keeps it, then undoes it, with a warning (--json: settled)", async () => {
    const kept = "a condense run write that was not confirmed is complete; kept";
    const first = interrupted("settle-complete", "step:appended");
    const u = await runCli(["undo", first.file], env);
    expect([u.code, u.stderr]).toEqual([0, `warning: ${first.file}: ${kept}\n`]);
    expect(u.stdout).toMatch(/^undid condense run of .* on .*t\.jsonl: removed \d+ entries/);
    expect(readFileSync(first.file).equals(first.original)).toBe(true);
    // A dry run settles it too (as every command does) and says so; the undo after it has nothing to settle.
    const second = interrupted("settle-complete-dry", "step:appended");
    const dry = await runCli(["undo", second.file, "--dry-run", "--json"], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout).settled).toBe(kept);
    const after = await runCli(["undo", second.file, "--json"], env);
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout).settled).toBeUndefined();
    expect(readFileSync(second.file).equals(second.original)).toBe(true);
  });
});

describe("undo after --migrate puts back the v1/v2 original byte for byte", () => {
  const V1 = path.join(SHARED_SESSIONS, "pimono-custom-tool-session.v1.jsonl");
  const V2 = path.join(FIXTURES, "v2-hookmessage.jsonl");
  const cases: [string, string[], string, number][] = [
    ["run", ["run"], V1, 1],
    ["compact", ["compact", "--keep-recent-tokens", "2000"], path.join(SHARED_SESSIONS, "pimono-large-session.v1.jsonl"), 1],
    ["compact", ["compact", "--keep-recent-tokens", "0"], V2, 2],
  ];
  for (const [op, command, source, version] of cases) {
    it(`${op} --migrate on a v${version} session, then undo`, async () => {
      const dir = path.join(tmp.dir, `migrated-${op}-v${version}`);
      mkdirSync(dir);
      const file = path.join(dir, "s.jsonl");
      copyFileSync(source, file);
      const original = readFileSync(file);
      const mode = statSync(file).mode;
      const wrote = await runCli([...command, file, "--migrate", "--json"], env);
      expect(wrote.code, wrote.stderr).toBe(0);
      const result = JSON.parse(wrote.stdout).sessions[0];
      const backup = `${file}.v${version}.bak`;
      expect(result).toMatchObject({ migratedFrom: version, backup, written: file });
      const entries = op === "run" ? result.entriesAppended : 1;
      const rewritten = readFileSync(file);

      const line = `put back the v${version} original from ${backup} (${original.length.toLocaleString("en-US")} bytes), in place of its v3 rewrite and ${entries} ${entries === 1 ? "entry" : "entries"}`;
      const dry = await runCli(["undo", file, "--dry-run"], env);
      // (The write's time is the wall clock's.)
      expect([dry.code, dry.stdout.replace(/ of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC /, " of <time> ")]).toEqual([
        0,
        `would undo condense ${op} of <time> on ${file}: ${line}\n`,
      ]);
      expect(readFileSync(file).equals(rewritten)).toBe(true);

      const undo = await runCli(["undo", file, "--json"], env);
      expect(undo.code, undo.stderr).toBe(0);
      expect(JSON.parse(undo.stdout)).toMatchObject({ op, restored: { backup, fromVersion: version, bytes: original.length }, sizeAfter: original.length });
      expect(readFileSync(file).equals(original)).toBe(true);
      expect(statSync(file).mode).toBe(mode);
      // Nothing of the write is left: no backup, no sidecars, no record.
      expect(filesBelow(dir)).toEqual(["s.jsonl"]);
    });

    it(`${op} --migrate on a v${version} session, an undo that stopped after putting the original back: the next one finishes`, async () => {
      const dir = path.join(tmp.dir, `migrated-${op}-v${version}-stopped`);
      mkdirSync(dir);
      const file = path.join(dir, "s.jsonl");
      copyFileSync(source, file);
      const original = readFileSync(file);
      expect((await runCli([...command, file, "--migrate", "-q"], env)).code).toBe(0);
      // What restoreMigrated does before it drops the record (its sidecars, if any, stay: the next undo removes them).
      renameSync(`${file}.v${version}.bak`, file);
      const dry = await runCli(["undo", file, "--dry-run"], env);
      expect(dry.stdout.replace(/ of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC /, " of <time> ")).toBe(
        `would finish undoing condense ${op} of <time> on ${file}: the v${version} original from ${file}.v${version}.bak (${original.length.toLocaleString("en-US")} bytes) was already back; its record would go\n`,
      );
      const undo = await runCli(["undo", file], env);
      expect(undo.code, undo.stderr).toBe(0);
      expect(undo.stdout.replace(/ of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC /, " of <time> ")).toBe(
        `finished undoing condense ${op} of <time> on ${file}: the v${version} original from ${file}.v${version}.bak (${original.length.toLocaleString("en-US")} bytes) was already back; its record is gone now\n`,
      );
      expect(readFileSync(file).equals(original)).toBe(true);
      expect(filesBelow(dir)).toEqual(["s.jsonl"]);
    });
  }

  it("a changed backup: the entries go, the file stays v3, and undo says why", async () => {
    const dir = path.join(tmp.dir, "migrated-changed-backup");
    mkdirSync(dir);
    const file = path.join(dir, "s.jsonl");
    copyFileSync(path.join(FIXTURES, "v1-with-compaction.jsonl"), file);
    // run --migrate with nothing to append: the report says the file was rewritten, not "unchanged".
    const migrated = await runCli(["run", file, "--migrate"], env);
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toContain("\nnothing was appended; the session file was rewritten as v3 (--migrate)\n");
    // Migrated, nothing appended: no write recorded; undo names the backup and how to put it back.
    const none = await runCli(["undo", file], env);
    expect(none.code).toBe(1);
    // No records file exists, so none is named.
    expect(existsSync(undoPath(file))).toBe(false);
    expect(none.stderr).toBe(
      `error: ${file}: no condense write to this session is recorded; nothing was changed; ` +
        `the original of a --migrate is in ${file}.v1.bak (\`mv ${file}.v1.bak ${file}\` puts it back)\n`,
    );
    // Where a records file exists (of writes to the session before), it is named.
    writeFileSync(undoPath(file), "");
    expect(undoRefusal(file, { state: "none" })).toBe(
      `${file}: no condense write to this session is recorded (the records of the last writes are kept in ${undoPath(file)}); nothing was changed; ` +
        `the original of a --migrate is in ${file}.v1.bak (\`mv ${file}.v1.bak ${file}\` puts it back)`,
    );
    // A records file that was edited or damaged says so, rather than only that nothing is recorded.
    writeFileSync(undoPath(file), "garbage{\n\n");
    expect(undoRefusal(file, { state: "none" })).toBe(
      `${file}: no condense write to this session is recorded (${undoPath(file)}, where the records of the last writes are kept, holds 1 line that is no record: edited or damaged); nothing was changed; ` +
        `the original of a --migrate is in ${file}.v1.bak (\`mv ${file}.v1.bak ${file}\` puts it back)`,
    );
    rmSync(undoPath(file));
    renameSync(`${file}.v1.bak`, file);
    const v3 = path.join(dir, "t.jsonl");
    copyFileSync(path.join(FIXTURES, "v2-hookmessage.jsonl"), v3);
    expect((await runCli(["compact", v3, "--migrate", "--keep-recent-tokens", "0", "-q"], env)).code).toBe(0);
    writeFileSync(`${v3}.v2.bak`, "edited\n");
    const undo = await runCli(["undo", v3], env);
    expect(undo.code, undo.stderr).toBe(0);
    expect(undo.stdout).toContain(`; the v2 original cannot be put back: its backup ${v3}.v2.bak was changed since; the file stays v3\n`);
    expect(readFileSync(v3, "utf8").startsWith('{"type":"session","version":3')).toBe(true);
  });
});

describe("undo counts the sidecar files it removed", () => {
  it("one deleted before the undo is neither removed nor counted (dry run, the undo, --json)", async () => {
    const dir = path.join(tmp.dir, "count-sidecars");
    mkdirSync(dir);
    const file = path.join(dir, "s.jsonl");
    copyFileSync(path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), file);
    const original = readFileSync(file);
    const run = await runCli(["run", file, "--json", ...SPILL], env);
    expect(run.code, run.stderr).toBe(0);
    const written = JSON.parse(run.stdout).sessions[0];
    expect(written.sidecars).toBe(8);
    const blobs = path.join(dir, readdirSync(dir).find((f) => f.endsWith("-blobs")) ?? "");
    const sidecars = readdirSync(blobs).sort();
    expect(sidecars).toHaveLength(8);
    rmSync(path.join(blobs, sidecars[0]));
    const n = (x: number) => x.toLocaleString("en-US");
    const size = original.length + written.bytesAppended;
    const tail = `${written.entriesAppended} entries (${n(written.bytesAppended)} bytes; ${n(size)} → ${n(original.length)} bytes) and 7 sidecar files\n`;
    const when = (s: string) => s.replace(/ of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC on /, " of <when> on ");
    const dry = await runCli(["undo", file, "--dry-run"], env);
    expect([dry.code, when(dry.stdout)]).toEqual([0, `would undo condense run of <when> on ${file}: remove ${tail}`]);
    const json = await runCli(["undo", file, "--dry-run", "--json"], env);
    expect(JSON.parse(json.stdout).sidecars.sort()).toEqual(sidecars.slice(1).map((f) => path.join(blobs, f)));
    const undo = await runCli(["undo", file], env);
    expect([undo.code, undo.stderr, when(undo.stdout)]).toEqual([0, "", `undid condense run of <when> on ${file}: removed ${tail}`]);
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(existsSync(blobs)).toBe(false);
  });
});
