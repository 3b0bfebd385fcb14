/**
 * A file-size limit (`ulimit -f`) reached during `condense run` (issue "Crash-proof", X): the write
 * stops short or fails with EFBIG; condense settles it like a crash — the file is byte-identical to
 * before, no journal, lock, temporary or sidecar is left, the exit code is 1 with a message naming
 * the cause. Also when SIGXFSZ is at its default action (where signal-exit would otherwise re-raise
 * it and kill the process mid-append) or inherited as ignored.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir } from "../helpers.js";
import { buildForChildren, generateSession, hasStackTrace, leftovers, runProcess, sha256 } from "./support.js";

let tmp: ReturnType<typeof makeTempDir>;
let build: ReturnType<typeof buildForChildren>;
let base: string;
let seq = 0;

beforeAll(() => {
  tmp = makeTempDir("ulimit");
  build = buildForChildren("ulimit");
  base = path.join(tmp.dir, "base.jsonl");
  generateSession(base, 2_000_000);
}, 60_000);

afterAll(() => {
  tmp?.cleanup();
  build?.cleanup();
});

/** `condense run` on a fresh copy under `ulimit -f <kib>`, with `prelude` run by the shell first. */
async function runLimited(kib: number, prelude: string) {
  const dir = path.join(tmp.dir, `d${++seq}`);
  const file = path.join(dir, "s.jsonl");
  mkdirSync(dir);
  cpSync(base, file);
  const script = `${prelude} ulimit -f ${kib}; exec ${prelude ? "" : "env --default-signal=XFSZ "}"$0" "$@"`;
  const r = await runProcess("bash", ["-c", script, process.execPath, build.bin, "run", file, "--set", "spillThreshold=4000"], {
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { ...r, file, dir };
}

const before = () => sha256(readFileSync(base));

describe("ulimit -f during run", () => {
  const cases: [string, string, number | "mid"][] = [
    ["SIGXFSZ inherited at its default action, limit in the middle of the append", "", "mid"],
    ["SIGXFSZ inherited as ignored, limit in the middle of the append", "trap '' XFSZ;", "mid"],
    ["limit below the size of the sidecars and journal (the first write fails)", "", 4],
    ["limit right at the session's size (the append cannot start)", "", -1],
  ];
  for (const [name, prelude, limit] of cases) {
    it(name, async () => {
      const size = readFileSync(base).length;
      const kib = limit === "mid" ? Math.ceil(size / 1024) + 64 : limit === -1 ? Math.ceil(size / 1024) : limit;
      const r = await runLimited(kib, prelude);
      expect([r.code, r.signal]).toEqual([1, null]);
      expect(r.stderr).toMatch(/^error: .*(file size limit|EFBIG)/m);
      expect(hasStackTrace(r.stderr)).toBe(false);
      expect(sha256(readFileSync(r.file))).toBe(before());
      expect(leftovers(r.file)).toEqual([]);
      const blobs = readdirSync(r.dir).filter((n) => n.endsWith("-blobs"));
      for (const b of blobs) expect(readdirSync(path.join(r.dir, b))).toEqual([]);
      expect(readdirSync(r.dir).sort()).toEqual(["s.jsonl", ...blobs].sort());
    });
  }

  it("the same run without a limit succeeds (the limit is what failed)", async () => {
    const r = await runLimited(10_000_000, "");
    expect(r.code).toBe(0);
    expect(readFileSync(r.file).length).toBeGreaterThan(readFileSync(base).length);
  });
});
