/**
 * `condense compact` over an archive with the built CLI: `--jobs 2` runs the zero-model path in
 * worker threads and must write exactly what `--jobs 1` writes (byte for byte, fixed clock) and
 * report the same document; v1/v2 files are migrated first (`--migrate`, a backup beside each);
 * files it cannot write (no header, not JSONL) fail alone.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { copyInto, SHARED_SESSIONS, tempDir } from "./cli-capture.js";

const shared = readdirSync(SHARED_SESSIONS)
  .filter((f) => f.endsWith(".jsonl"))
  .sort();

function archive(dir: string): void {
  for (const f of shared) copyInto(dir, path.join(SHARED_SESSIONS, f));
  writeFileSync(path.join(dir, "zz-corrupt.jsonl"), "\u0000\u0001 not a session\n");
}

/** The document without what depends on the folders (the sessions', Pi's agent folder) or the clock of the run. */
function normalized(stdout: string, ...dirs: string[]) {
  const doc = JSON.parse(stdout);
  const strip = (s: any) => {
    const { wallMs: _w, ...rest } = s;
    return JSON.parse(dirs.reduce((text, dir) => text.replaceAll(dir, "<dir>"), JSON.stringify(rest)));
  };
  return { sessions: doc.sessions.map(strip), failures: doc.failures.map(strip) };
}

describe("compact --jobs 2 in worker threads (built CLI)", () => {
  const pooledDir = tempDir("compact-pool");
  const singleDir = tempDir("compact-single");
  let cli: ReturnType<typeof buildCli>;
  beforeAll(() => {
    archive(pooledDir.dir);
    archive(singleDir.dir);
    cli = buildCli("compact-archive");
  }, 120_000);
  afterAll(() => {
    pooledDir.cleanup();
    singleDir.cleanup();
    cli?.cleanup();
  });

  it("writes the same bytes and reports the same as one file at a time; bad files fail alone", () => {
    const bin = cli.bin;
    const env = { ...process.env, PI_CODING_AGENT_DIR: pooledDir.dir, NO_COLOR: "1", CONDENSE_NOW: "2026-03-01T00:00:00.000Z" };
    const pooled = spawnSync(process.execPath, [bin, "compact", pooledDir.dir, "--json", "--migrate", "--jobs", "2"], {
      encoding: "utf8",
      env,
      maxBuffer: 64 << 20,
    });
    const single = spawnSync(process.execPath, [bin, "compact", singleDir.dir, "--json", "--migrate", "--jobs", "1"], {
      encoding: "utf8",
      env,
      maxBuffer: 64 << 20,
    });
    expect(pooled.status, pooled.stderr).toBe(1);
    expect(single.status).toBe(1);
    const a = normalized(pooled.stdout, pooledDir.dir);
    // (Both runs read Pi's settings from the pooled folder: the target's reason names it.)
    const b = normalized(single.stdout, singleDir.dir, pooledDir.dir);
    expect(a).toEqual(b);
    // Failures: the header-less gjc-01 and the corrupt file.
    expect(a.failures.map((f: any) => path.basename(f.session)).sort()).toEqual(["gjc-01-youtube-transcript-extraction.v3.jsonl", "zz-corrupt.jsonl"]);
    // Every v1/v2 file was migrated (the v1 pimono-custom-tool-session is already compacted and the
    // v2 file too small: migrated only), its original bytes kept in the backup.
    const migrated = a.sessions.filter((s: any) => s.migratedFrom !== undefined).map((s: any) => path.basename(s.session));
    expect(migrated).toEqual([
      "handmade-v2-hookmessage.jsonl",
      "pimono-before-compaction.v1.jsonl",
      "pimono-compact-hooks.v1.jsonl",
      "pimono-custom-tool-session.v1.jsonl",
      "pimono-large-session.v1.jsonl",
    ]);
    for (const name of migrated) {
      const version = name.includes("v2") ? 2 : 1;
      expect(readFileSync(path.join(pooledDir.dir, `${name}.v${version}.bak`)).equals(readFileSync(path.join(SHARED_SESSIONS, name))), name).toBe(true);
    }
    const compacted = a.sessions.filter((s: any) => s.status === "compacted").map((s: any) => path.basename(s.session));
    expect(compacted).toEqual([
      "gjc-02-inline-agent-design.v3.jsonl",
      "gjc-03-raddit-dashboard-pr.v3.jsonl",
      "gjc-04-awesome-agent-ide.v3.jsonl",
      "kimchi-session.v3.jsonl",
      "kimchi-statusline.v3.jsonl",
      "pimono-before-compaction.migrated-v3.jsonl",
      "pimono-before-compaction.v1.jsonl",
      "pimono-compact-hooks.migrated-v3.jsonl",
      "pimono-compact-hooks.v1.jsonl",
      "pimono-large-session.migrated-v3.jsonl",
      "pimono-large-session.v1.jsonl",
      "trl-session.v3.jsonl",
    ]);
    for (const f of shared) {
      expect(readFileSync(path.join(pooledDir.dir, f)).equals(readFileSync(path.join(singleDir.dir, f))), f).toBe(true);
    }
  });
});
