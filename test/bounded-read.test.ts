/**
 * Bounded memory on absurd inputs (issue "Crash-proof"): a line longer than the limit (256 MiB;
 * `CONDENSE_MAX_LINE_BYTES` in tests) is reported with its line number and byte offset without
 * being read whole, by every command (exit 2); a 1 GB sparse file fails fast; a FIFO or device given
 * as the session is refused without blocking.
 */
import { execFileSync } from "node:child_process";
import { closeSync, openSync, ftruncateSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionFile } from "../src/session/reader.js";
import { runCli } from "./cli-capture.js";
import { runCli as captureCli } from "./cli-harness.js";
import { makeTempDir } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  tmp = makeTempDir("bounded");
});
afterAll(() => tmp?.cleanup());

const header = `${JSON.stringify({ type: "session", version: 3, id: "b0000000-0000-7000-8000-000000000001", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" })}\n`;
const entry = (id: string, parentId: string | null, text: string) =>
  `${JSON.stringify({ type: "message", id, parentId, timestamp: "2026-01-01T00:00:01.000Z", message: { role: "user", content: text, timestamp: 1 } })}\n`;

describe("a line over the limit", () => {
  it("is named by line and offset; lines under the limit across chunk borders read as usual", async () => {
    const file = path.join(tmp.dir, "long.jsonl");
    const ok = entry("a0000001", null, "x".repeat(5 * 1024 * 1024)); // spans two 4 MiB chunks
    const long = entry("a0000002", "a0000001", "y".repeat(7 * 1024 * 1024));
    writeFileSync(file, header + ok + long + entry("a0000003", "a0000002", "z"));
    const env = { CONDENSE_MAX_LINE_BYTES: String(6 * 1024 * 1024) };
    const saved = process.env.CONDENSE_MAX_LINE_BYTES;
    process.env.CONDENSE_MAX_LINE_BYTES = env.CONDENSE_MAX_LINE_BYTES;
    try {
      const raw = await readSessionFile(file);
      expect(raw.problems).toEqual([
        {
          kind: "line-too-long",
          message: `line 3 (byte ${header.length + ok.length}) is longer than 6,291,456 bytes; condense does not read lines that long (Pi cannot load lines over 512 MiB either)`,
        },
      ]);
      expect(raw.entries.map((e) => e.id)).toEqual(["a0000001"]);
    } finally {
      if (saved === undefined) delete process.env.CONDENSE_MAX_LINE_BYTES;
      else process.env.CONDENSE_MAX_LINE_BYTES = saved;
    }
    for (const args of [
      ["render", file],
      ["metrics", file],
      ["budget", file],
      ["query", "t1", "--session", file],
      ["run", file, "--dry-run"],
    ]) {
      const r = await captureCli(args, { ...env, NO_COLOR: "1" });
      expect([args[0], r.code]).toEqual([args[0], 2]);
      expect(r.stderr).toContain(`line 3 (byte ${header.length + ok.length}) is longer than 6,291,456 bytes`);
    }
  });

  it("a 1 GB sparse file (one line of NUL bytes) fails with the default limit, naming line 1 at byte 0", async () => {
    const file = path.join(tmp.dir, "sparse.jsonl");
    const fd = openSync(file, "w");
    ftruncateSync(fd, 1024 * 1024 * 1024);
    closeSync(fd);
    const r = await runCli("render", file);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `error: ${file}: line 1 (byte 0) is longer than 268,435,456 bytes; condense does not read lines that long (Pi cannot load lines over 512 MiB either)\n`,
    );
  });
});

describe("not a regular file", () => {
  it("a FIFO as the session is refused at once (no hang)", async () => {
    const fifo = path.join(tmp.dir, "pipe.jsonl");
    execFileSync("mkfifo", [fifo]);
    const r = await runCli("render", fifo);
    expect([r.code, r.stderr]).toEqual([2, `error: ${fifo}: cannot read: not a regular file\n`]);
  });

  it("/dev/zero as the session is refused", async () => {
    const r = await runCli("render", "/dev/zero");
    expect([r.code, r.stderr]).toEqual([2, "error: /dev/zero: cannot read: not a regular file\n"]);
  });
});
