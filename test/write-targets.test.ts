/**
 * Files the user names (`report --html`, `run/compact --output`, `query --save-images`,
 * `install-skill`'s folder) follow one rule (session/write-target.ts): a session is never
 * overwritten by a report or an image, the input never by anything, an existing file only with
 * `--force` (or when it is the command's own earlier output), and a missing folder is an error
 * naming it, never created. Every refusal exits 2 and leaves every byte as it was.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copyInto, FIXTURES, runCli, SHARED_SESSIONS, tempDir } from "./cli-capture.js";
import { runCli as harness } from "./cli-harness.js";

const NOW = { CONDENSE_NOW: "2026-01-01T00:00:00.000Z" };
const tmp = tempDir("write-targets");
afterAll(() => tmp.cleanup());
let n = 0;
/** A fresh folder with a copy of `source` in it. */
function folderWith(source: string): { dir: string; file: string } {
  const dir = path.join(tmp.dir, `case-${++n}`);
  mkdirSync(dir);
  return { dir, file: copyInto(dir, source) };
}
const EXAMPLE = path.join(FIXTURES, "example-session.jsonl");
const KIMCHI = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");

describe("report --html", () => {
  it("onto another session: refused even with --force, the session byte-identical, exit 2", async () => {
    const { dir, file } = folderWith(EXAMPLE);
    const victim = copyInto(dir, KIMCHI);
    const before = readFileSync(victim);
    for (const force of [[], ["--force"]]) {
      const r = await runCli("report", file, "--html", victim, ...force);
      expect([r.code, r.stdout]).toEqual([2, ""]);
      expect(r.stderr).toBe(
        `error: --html ${victim} is a Pi session file; condense never overwrites a session with its --html output — name another file (nothing was written)\n`,
      );
      expect(readFileSync(victim).equals(before)).toBe(true);
    }
  });

  it("onto the session it reports on: refused, byte-identical", async () => {
    const { file } = folderWith(EXAMPLE);
    const before = readFileSync(file);
    const r = await runCli("report", file, "--html", file, "--force");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: --html ${file} is the input session itself; name another file (nothing was written)\n`);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("onto an existing file: refused without --force, replaced with it; its own earlier page is replaced without", async () => {
    const { dir, file } = folderWith(EXAMPLE);
    const notes = path.join(dir, "notes.html");
    writeFileSync(notes, "<p>mine</p>\n");
    const refused = await runCli("report", file, "--html", notes);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`error: --html ${notes} already exists; use --force to overwrite it\n`);
    expect(readFileSync(notes, "utf8")).toBe("<p>mine</p>\n");
    expect((await runCli("report", file, "--html", notes, "--force", "-q")).code).toBe(0);
    expect(readFileSync(notes, "utf8")).toMatch(/^<!doctype html>\n[\s\S]*<title>condense report — /);
    // The page it wrote is its own output: a second report replaces it without --force.
    const again = await harness(["report", file, "--html", notes], { ...NOW, NO_COLOR: "1" });
    expect(again.code, again.stderr).toBe(0);
  });

  it("into a folder that does not exist: refused, naming the folder, which is not created", async () => {
    const { dir, file } = folderWith(EXAMPLE);
    const missing = path.join(dir, "no", "such");
    const r = await runCli("report", file, "--html", path.join(missing, "x.html"));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: --html ${path.join(missing, "x.html")}: the folder ${missing} does not exist; create it first (nothing was written)\n`);
    expect(existsSync(path.join(dir, "no"))).toBe(false);
  });
});

describe("run --output and compact --output", () => {
  for (const command of [["run"], ["compact"]]) {
    it(`${command[0]} --output into a missing folder: exit 2 naming it, nothing created`, async () => {
      const { dir, file } = folderWith(EXAMPLE);
      const before = readFileSync(file);
      const target = path.join(dir, "out", "pruned.jsonl");
      const r = await runCli(...command, file, "--output", target);
      expect([r.code, r.stdout]).toEqual([2, ""]);
      expect(r.stderr).toBe(`error: --output ${target}: the folder ${path.join(dir, "out")} does not exist; create it first (nothing was written)\n`);
      expect(existsSync(path.join(dir, "out"))).toBe(false);
      expect(readFileSync(file).equals(before)).toBe(true);
    });
  }

  it("run --output onto an existing file is refused before any work; --force replaces it", async () => {
    const { dir, file } = folderWith(EXAMPLE);
    const target = copyInto(dir, KIMCHI, "other.jsonl");
    const before = readFileSync(target);
    const r = await runCli("run", file, "--output", target);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: --output ${target} already exists; use --force to overwrite it\n`);
    expect(readFileSync(target).equals(before)).toBe(true);
    expect((await runCli("run", file, "--output", target, "--force", "-q")).code).toBe(0);
    expect(readFileSync(target).subarray(0, readFileSync(file).length).equals(readFileSync(file))).toBe(true);
  });

  it("over a symbolic link, a FIFO or a character device: refused even with --force (exit 2), none replaced", async () => {
    // As root, `run --output /dev/null --force` renamed a regular file over /dev/null.
    const { dir, file } = folderWith(EXAMPLE);
    const fifo = path.join(dir, "fifo");
    const device = path.join(dir, "null");
    const link = path.join(dir, "link.jsonl");
    execFileSync("mkfifo", [fifo]);
    symlinkSync(copyInto(dir, KIMCHI, "elsewhere.jsonl"), link);
    const root = process.getuid?.() === 0;
    if (root) execFileSync("mknod", [device, "c", "1", "3"]);
    const notRegular = (flag: string, target: string) =>
      `error: ${flag} ${target} already exists and is not a regular file (a device, FIFO or socket); condense does not replace it — name a file (nothing was written)\n`;
    for (const command of ["run", "compact"]) {
      for (const target of root ? [fifo, device] : [fifo]) {
        const r = await runCli(command, file, "--output", target, "--force");
        expect([command, r.code, r.stdout, r.stderr]).toEqual([command, 2, "", notRegular("--output", target)]);
      }
      const r = await runCli(command, file, "--output", link, "--force");
      expect([command, r.code, r.stderr]).toEqual([
        command,
        2,
        `error: --output ${link} is a symbolic link; condense writes a new file in its place, which would replace the link — name the file itself (nothing was written)\n`,
      ]);
    }
    const html = await runCli("report", file, "--html", fifo, "--force");
    expect([html.code, html.stderr]).toEqual([2, notRegular("--html", fifo)]);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(link).equals(readFileSync(KIMCHI))).toBe(true);
    if (root) expect(lstatSync(device).isCharacterDevice()).toBe(true);
  });
});

describe("query --save-images", () => {
  const IMAGE = path.join(FIXTURES, "image-in-summarized-result.jsonl");
  const prepared = async () => {
    const { dir, file } = folderWith(IMAGE);
    expect((await harness(["run", file, "--quiet"], { ...NOW, NO_COLOR: "1" })).code).toBe(0);
    return { dir, file };
  };

  it("onto an existing file: a clear refusal (exit 2), the file unchanged", async () => {
    const { dir, file } = await prepared();
    const before = readFileSync(file);
    const r = await runCli("query", "t1", "--session", file, "--save-images", file);
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr).toBe(`error: --save-images ${file} is not a folder; name a folder (it is created when missing; nothing was written)\n`);
    expect(readFileSync(file).equals(before)).toBe(true);
    const nested = path.join(dir, "a", "b");
    const deep = await runCli("query", "t1", "--session", file, "--save-images", nested);
    expect(deep.code).toBe(2);
    expect(deep.stderr).toBe(`error: --save-images ${nested}: the folder ${path.join(dir, "a")} does not exist; create it first (nothing was written)\n`);
    expect(existsSync(path.join(dir, "a"))).toBe(false);
  });

  it("an image file of the same name: kept when it holds other bytes (without --force), rewritten when the same", async () => {
    const { dir, file } = await prepared();
    const images = path.join(dir, "img");
    const first = JSON.parse((await runCli("query", "t1", "--session", file, "--json", "--save-images", images)).stdout);
    const png = first.results[0].images[0].savedTo as string;
    const bytes = readFileSync(png);
    // Same bytes: its own earlier output, written again.
    expect((await runCli("query", "t1", "--session", file, "--save-images", images)).code).toBe(0);
    writeFileSync(png, "edited");
    const refused = await runCli("query", "t1", "--session", file, "--save-images", images);
    expect([refused.code, refused.stdout]).toEqual([2, ""]);
    expect(refused.stderr).toBe(`error: --save-images ${png} already exists; use --force to overwrite it\n`);
    expect(readFileSync(png, "utf8")).toBe("edited");
    expect((await runCli("query", "t1", "--session", file, "--save-images", images, "--force")).code).toBe(0);
    expect(readFileSync(png).equals(bytes)).toBe(true);
  });
});

describe("install-skill", () => {
  it("refuses a Pi agent folder that does not exist instead of creating it", async () => {
    const agent = path.join(tmp.dir, "no-agent-here");
    const r = await harness(["install-skill"], { PI_CODING_AGENT_DIR: agent, NO_COLOR: "1" });
    expect([r.code, r.stdout]).toEqual([2, ""]);
    expect(r.stderr).toBe(
      `error: Pi's agent folder ${agent} does not exist (Pi creates it on its first run; is $PI_CODING_AGENT_DIR right?); nothing was written — or use --project\n`,
    );
    expect(existsSync(agent)).toBe(false);
  });
});
