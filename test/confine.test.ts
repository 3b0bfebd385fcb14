/**
 * Paths read from a session are confined (issue "Crash-proof", hostile input): `query` reads a
 * spilled output only as a regular file, with one link, directly inside the session's own
 * `<id>-blobs/` folder next to the session's real path, and only up to a size limit. A crafted
 * `spillPath` (/etc/passwd, /proc/self/environ, /dev/zero, a FIFO, a symlink or hard link out of the
 * folder, `..`, a canary file elsewhere) is reported as refused or missing, and the stored head
 * preview is shown instead; nothing outside the folder is read, nothing hangs. A fork (Pi's
 * `/fork`: header `parentSession`) may also read from its parent's blobs folder, under the same
 * rules, and only when `parentSession` names a `*.jsonl` file with a session header.
 */
import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSidecar, SidecarRefused } from "../src/session/sidecars.js";
import { runCli, tempDir, writeSession } from "./render-support.js";

const ID = "0f0000aa-0000-7000-8000-0000000000aa";
const CANARY = "CANARY-7f3a";

let tmp: ReturnType<typeof tempDir>;
let dir: string;
let blobs: string;
let file: string;
let real: string;
let spilled: string;

beforeAll(async () => {
  tmp = tempDir("confine");
  dir = path.join(tmp.dir, "s");
  mkdirSync(dir);
  file = path.join(dir, "spill.jsonl");
  const huge = `${Array.from({ length: 3000 }, (_, i) => `row ${i} ${"z".repeat(30)}`).join("\n")}\n`;
  writeSession(file, [huge]);
  expect((await runCli(["run", file, "--quiet"])).code).toBe(0);
  blobs = path.join(dir, `${ID}-blobs`);
  real = path.join(blobs, "bash_0_1767225603000.txt");
  spilled = readFileSync(file, "utf8");
  expect(spilled).toContain(JSON.stringify(real));
  // Things a crafted session may point at.
  writeFileSync(path.join(tmp.dir, "canary.txt"), CANARY);
  writeFileSync(path.join(tmp.dir, "outside.txt"), CANARY);
  symlinkSync(path.join(tmp.dir, "canary.txt"), path.join(blobs, "link.txt"));
  linkSync(path.join(tmp.dir, "canary.txt"), path.join(blobs, "hard.txt"));
  execFileSync("mkfifo", [path.join(blobs, "fifo.txt")]);
  mkdirSync(path.join(blobs, "folder.txt"));
  writeFileSync(path.join(blobs, "big.txt"), "x".repeat(2000));
});

afterAll(() => tmp?.cleanup());

/** The session with its record's spillPath replaced, queried as JSON. */
async function queryWith(spillPath: string, env: Record<string, string> = {}) {
  const crafted = path.join(dir, "crafted.jsonl");
  writeFileSync(crafted, spilled.replaceAll(JSON.stringify(real), JSON.stringify(spillPath)));
  const r = await runCli(["query", "t1", "--full", "--json", "--session", crafted], env);
  return { r, res: JSON.parse(r.stdout).results[0] };
}

describe("query reads sidecars only inside the session's own blobs folder", () => {
  const refused: [string, () => string, string][] = [
    ["/etc/passwd", () => "/etc/passwd", "refused: /etc/passwd: not a sidecar file name (<name>.txt)"],
    ["/proc/self/environ", () => "/proc/self/environ", "refused: /proc/self/environ: not a sidecar file name (<name>.txt)"],
    ["/dev/zero", () => "/dev/zero", "refused: /dev/zero: not a sidecar file name (<name>.txt)"],
    ["a canary file elsewhere with a sidecar-like name", () => path.join(tmp.dir, "canary.txt"), "missing: "],
    ["../ out of the folder", () => path.join(blobs, "../../outside.txt"), "missing: "],
    ["a symlink in the folder pointing out", () => path.join(blobs, "link.txt"), "refused: "],
    ["a hard link in the folder", () => path.join(blobs, "hard.txt"), "refused: "],
    ["a FIFO in the folder (must not hang)", () => path.join(blobs, "fifo.txt"), "refused: "],
    ["a folder named like a sidecar", () => path.join(blobs, "folder.txt"), "refused: "],
    ["a hidden name", () => path.join(blobs, ".hidden.txt"), "refused: "],
  ];
  for (const [name, target, reason] of refused) {
    it(`${name} → the stored preview, the path reported, the canary never read`, async () => {
      const p = target();
      const { r, res } = await queryWith(p);
      expect(r.code).toBe(0);
      expect(res.outputSource).toBe("preview");
      expect(res.output).toBe(res.record.resultPreview);
      expect(res.sidecarError.startsWith(reason)).toBe(true);
      expect(res.sidecarError).toContain(p);
      expect(r.stdout).not.toContain(CANARY);
      expect(r.stdout).not.toContain("root:");
    });
  }

  it("the real sidecar is read, also when the session names it by an old absolute path elsewhere", async () => {
    const { res } = await queryWith("/old/place/sessions/x-blobs/bash_0_1767225603000.txt");
    expect(res.outputSource).toBe("sidecar");
    expect(res.sidecarPath).toBe(real);
    expect(res.output).toBe(readFileSync(real, "utf8"));
  });

  it("a sidecar over the size limit is refused with its size", async () => {
    const { res } = await queryWith(path.join(blobs, "big.txt"), { CONDENSE_MAX_SIDECAR_BYTES: "1000" });
    expect(res.sidecarError).toBe(`refused: ${path.join(blobs, "big.txt")}: 2000 bytes, over the 1000-byte limit`);
  });

  it("the text output says why the preview is shown", async () => {
    const crafted = path.join(dir, "crafted-text.jsonl");
    writeFileSync(crafted, spilled.replaceAll(JSON.stringify(real), JSON.stringify("/etc/passwd")));
    const r = await runCli(["query", "t1", "--session", crafted]);
    expect(r.stdout).toContain("Spilled output unavailable (refused: /etc/passwd: not a sidecar file name (<name>.txt)); showing the stored head preview");
  });
});

describe("a fork reads its parent's sidecars: from the blobs folder beside a session file its header names, and nowhere else", () => {
  const FORK = "0f0000bb-0000-7000-8000-0000000000bb";
  let forks: string;
  beforeAll(() => {
    forks = path.join(tmp.dir, "forks");
    mkdirSync(forks);
    // A session file elsewhere whose blobs folder holds the sidecar's name as a link to the canary.
    const evil = path.join(tmp.dir, "evil");
    mkdirSync(path.join(evil, "0f0000ee-0000-7000-8000-0000000000ee-blobs"), { recursive: true });
    writeFileSync(
      path.join(evil, "p.jsonl"),
      `${JSON.stringify({ type: "session", version: 3, id: "0f0000ee-0000-7000-8000-0000000000ee", timestamp: "2026-01-01T00:00:00.000Z" })}\n`,
    );
    symlinkSync(path.join(tmp.dir, "canary.txt"), path.join(evil, "0f0000ee-0000-7000-8000-0000000000ee-blobs", "bash_0_1767225603000.txt"));
    writeFileSync(path.join(tmp.dir, "canary.jsonl"), `${CANARY}\n`);
    mkdirSync(path.join(tmp.dir, "folder.jsonl"));
    symlinkSync(path.join(tmp.dir, "canary.txt"), path.join(tmp.dir, "canary-link.jsonl"));
  });

  /** A fork of the spilled session (its entries, a header of its own naming `parentSession`), queried as JSON. */
  async function forkWith(parentSession: string) {
    const [header, ...rest] = spilled.split("\n");
    const forked = path.join(forks, `fork-${Math.random().toString(16).slice(2)}.jsonl`);
    writeFileSync(forked, [JSON.stringify({ ...JSON.parse(header), id: FORK, parentSession }), ...rest].join("\n"));
    const r = await runCli(["query", "t1", "--full", "--json", "--session", forked]);
    return { r, res: JSON.parse(r.stdout).results[0] };
  }
  const missingOwn = () => `missing: ${real}: the session's sidecar folder ${path.join(forks, `${FORK}-blobs`)} does not exist`;

  it("the parent's sidecar is read, by absolute or relative path to the parent", async () => {
    for (const parent of [file, path.relative(forks, file)]) {
      const { res } = await forkWith(parent);
      expect([res.outputSource, res.sidecarPath, res.output], parent).toEqual(["sidecar", real, readFileSync(real, "utf8")]);
    }
  });

  const notSessions: [string, () => string][] = [
    ["/etc/passwd", () => "/etc/passwd"],
    ["a .jsonl file without a session header (the canary)", () => path.join(tmp.dir, "canary.jsonl")],
    ["a folder named *.jsonl", () => path.join(tmp.dir, "folder.jsonl")],
    ["a *.jsonl link to a file that is not named *.jsonl", () => path.join(tmp.dir, "canary-link.jsonl")],
    ["nothing there", () => path.join(tmp.dir, "gone.jsonl")],
  ];
  for (const [name, parent] of notSessions) {
    it(`parentSession ${name} → not a parent: the stored preview, only the fork's own folder tried`, async () => {
      const { r, res } = await forkWith(parent());
      expect([res.outputSource, res.output, res.sidecarError]).toEqual(["preview", res.record.resultPreview, missingOwn()]);
      expect(r.stdout).not.toContain(CANARY);
      expect(r.stdout).not.toContain("root:");
    });
  }

  it("a parent's blobs folder gets the same rules: a symlink there is refused, the canary never read", async () => {
    const { r, res } = await forkWith(path.join(tmp.dir, "evil", "p.jsonl"));
    expect([res.outputSource, res.sidecarError]).toEqual(["preview", `refused: ${real}: a symbolic link`]);
    expect(r.stdout).not.toContain(CANARY);
  });
});

describe("readSidecar", () => {
  it("refuses a blobs folder that is itself a symlink", () => {
    const other = path.join(tmp.dir, "elsewhere-blobs");
    mkdirSync(other);
    writeFileSync(path.join(other, "a.txt"), CANARY);
    const linked = path.join(tmp.dir, "linked-blobs");
    symlinkSync(other, linked);
    const error = (() => {
      try {
        readSidecar(linked, "a.txt");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SidecarRefused);
    expect((error as SidecarRefused).reason).toBe(`${linked} is not a folder`);
  });

  it("reads a plain sidecar exactly", () => {
    expect(readSidecar(blobs, "bash_0_1767225603000.txt")).toBe(readFileSync(real, "utf8"));
  });
});
