import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionLabels } from "../src/cli/output.js";
import { REPO_ROOT, SHARED_SESSIONS, copyInto, runCli, runCliWith, tempDir } from "./cli-capture.js";

const NOW = "2026-03-01T00:00:00.000Z";
const shared = readdirSync(SHARED_SESSIONS)
  .filter((f) => f.endsWith(".jsonl"))
  .sort();

/** Size of every file below `dir`, by relative path. */
function sizes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else out[path.relative(dir, full)] = statSync(full).size;
    }
  };
  walk(dir);
  return out;
}

/** A folder with copies of the shared sessions plus a corrupt, a header-less and an empty file. */
function makeArchive(dir: string): { corrupt: string; headerless: string; empty: string } {
  for (const f of shared) copyInto(dir, path.join(SHARED_SESSIONS, f));
  const corrupt = path.join(dir, "zz-corrupt.jsonl");
  writeFileSync(corrupt, "\u0000\u0001 this is not a session\n<<<<<<< HEAD\n");
  const headerless = path.join(dir, "zz-headerless.jsonl");
  const lines = readFileSync(path.join(SHARED_SESSIONS, "pi-generated-branched.v3.jsonl"), "utf8").split("\n");
  writeFileSync(headerless, `${lines.slice(1).join("\n")}`);
  const empty = path.join(dir, "zz-empty.jsonl");
  writeFileSync(empty, "");
  return { corrupt, headerless, empty };
}

describe("metrics over an archive", () => {
  const tmp = tempDir("archive-metrics");
  let bad: ReturnType<typeof makeArchive>;
  beforeAll(() => {
    bad = makeArchive(tmp.dir);
  });
  afterAll(tmp.cleanup);

  it("processes every readable session, reports the bad files and exits 1", async () => {
    const r = await runCli("metrics", tmp.dir, "--json", "--jobs", "2");
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    // Every shared session Pi can open; the files Pi cannot open (gjc-01 and the header-less copy
    // have no header) are failures, so a CI gate never passes on them.
    const headerlessShared = shared.filter((f) => f.startsWith("gjc-01"));
    expect(headerlessShared).toHaveLength(1);
    expect(doc.sessions.map((s: { session: string }) => path.basename(s.session))).toEqual(shared.filter((f) => !headerlessShared.includes(f)));
    expect(doc.failures.map((f: { session: string }) => path.basename(f.session))).toEqual([
      ...headerlessShared,
      "zz-corrupt.jsonl",
      "zz-empty.jsonl",
      "zz-headerless.jsonl",
    ]);
    expect(doc.failures[0].error).toContain("no session header");
    expect(doc.failures[1].error).toContain("not a JSONL session");
    expect(doc.failures[2].error).toContain("the file is empty");
    expect(doc.failures[3].error).toBe(
      `${bad.headerless}: no session header: the first entry (line 1, a "model_change" entry) should be {"type":"session","id",...}; Pi refuses to open such a file`,
    );
    expect(doc.totals.sessions).toBe(shared.length - 1);
    expect(doc.totals.failed).toBe(4);
  });

  it("prints one row per file and a totals row naming the failures", async () => {
    const r = await runCli("metrics", tmp.dir, "--jobs", "2");
    expect(r.code).toBe(1);
    // Each row starts with the session's label: short id (its file name when two files share the
    // id), date, then name or first prompt (cut to fit). gjc-01 (no header) is a failure, not a row.
    const doc = JSON.parse((await runCli("metrics", tmp.dir, "--jobs", "2", "--json")).stdout);
    const labels = sessionLabels(doc.sessions);
    const rows = r.stdout.split("\n").filter((l) => l.startsWith("│ ") && !l.startsWith("│ session"));
    expect(rows).toHaveLength(shared.length);
    for (const [i, label] of labels.entries()) expect(rows[i].startsWith(`│ ${label.slice(0, 30)}`)).toBe(true);
    expect(r.stderr).toContain(`error: ${path.join(tmp.dir, shared.find((f) => f.startsWith("gjc-01")) as string)}: no session header`);
    expect(r.stdout).toContain(`total (${shared.length - 1}, 4 failed)`);
    expect(r.stderr).toContain(`error: ${bad.empty}: the file is empty`);
  });
});

describe("run over an archive, twice", () => {
  const tmp = tempDir("archive-run");
  let bad: ReturnType<typeof makeArchive>;
  beforeAll(() => {
    bad = makeArchive(tmp.dir);
    process.env.CONDENSE_NOW = NOW;
  });
  afterAll(() => {
    delete process.env.CONDENSE_NOW;
    tmp.cleanup();
  });

  it("first pass: every good session condensed, the bad ones reported, exit 1", async () => {
    const r = await runCli("run", tmp.dir, "--migrate", "--json", "--jobs", "2");
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    const refused = ["gjc-01-youtube-transcript-extraction.v3.jsonl", "zz-corrupt.jsonl", "zz-empty.jsonl", "zz-headerless.jsonl"];
    expect(doc.failures.map((f: { session: string }) => path.basename(f.session))).toEqual(refused);
    expect(doc.failures.find((f: { session: string }) => f.session === bad.headerless).error).toContain("refusing to write to it");
    const done = doc.sessions.map((s: { session: string }) => path.basename(s.session));
    expect(done).toEqual(shared.filter((f) => !refused.includes(f)));
    expect(doc.sessions.reduce((n: number, s: { entriesAppended: number }) => n + s.entriesAppended, 0)).toBeGreaterThan(0);
  });

  it("second pass: nothing appended anywhere (every file keeps its size), same failures", async () => {
    const before = sizes(tmp.dir);
    const r = await runCli("run", tmp.dir, "--json", "--jobs", "2");
    expect(r.code).toBe(1);
    expect(sizes(tmp.dir)).toEqual(before);
    const doc = JSON.parse(r.stdout);
    expect(doc.failures).toHaveLength(4);
    // With --json too, each failure is also an error line on stderr (as metrics and report print them).
    const errors = r.stderr.split("\n").filter((l) => l.startsWith("error: "));
    expect(errors).toEqual(doc.failures.map((f: { error: string }) => `error: ${f.error}`));
    for (const s of doc.sessions) {
      expect(s.entriesAppended).toBe(0);
      expect(s.written).toBeNull();
      expect(s.bytesAppended).toBe(0);
      // The quick check found nothing to capture, compress or record: no summarizer, no plan.
      expect(s.summarizer).toBe("none (nothing to do)");
    }
  });

  it("the table ends with a totals row", async () => {
    const r = await runCli("run", tmp.dir, "--jobs", "2");
    const n = shared.length - 1; // every shared session but the header-less gjc-01
    // The 4 files that cannot be condensed are counted too, as metrics counts them.
    expect(r.stdout).toContain(`total (${n}, ${n} with nothing to do, 4 failed)`);
  });
});

describe("--jobs 2 runs metrics in worker threads (built CLI)", () => {
  const tmp = tempDir("archive-workers");
  beforeAll(() => {
    makeArchive(tmp.dir);
    const build = spawnSync("npx", ["tsc", "-p", "."], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(build.status, build.stdout + build.stderr).toBe(0);
  }, 120_000);
  afterAll(tmp.cleanup);

  it("gives the same document as the in-process path, bad files included", async () => {
    const bin = path.join(REPO_ROOT, "bin/condense.js");
    const env = { ...process.env, PI_CODING_AGENT_DIR: tmp.dir, NO_COLOR: "1" };
    const pooled = spawnSync(process.execPath, [bin, "metrics", tmp.dir, "--json", "--jobs", "2"], { encoding: "utf8", env, maxBuffer: 64 << 20 });
    expect(pooled.status).toBe(1);
    const single = spawnSync(process.execPath, [bin, "metrics", tmp.dir, "--json", "--jobs", "1"], { encoding: "utf8", env, maxBuffer: 64 << 20 });
    expect(single.status).toBe(1);
    expect(JSON.parse(pooled.stdout)).toEqual(JSON.parse(single.stdout));
    // The same Pi folder: metrics names the settings file behind the target its "after" is planned for.
    const inProcess = await runCliWith({ PI_CODING_AGENT_DIR: tmp.dir }, "metrics", tmp.dir, "--json", "--jobs", "2");
    expect(JSON.parse(pooled.stdout)).toEqual(JSON.parse(inProcess.stdout));
  });
});
