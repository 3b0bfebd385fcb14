/**
 * A FIFO named as a session is refused at once by every command, as `render` refuses it
 * (`error: <path>: cannot read: not a regular file`, exit 2) — also by `run` and `metrics`, which
 * read the session's header (its project folder, for the settings warnings) before the session
 * reader. Beside a real file in one call, the real file is still processed and the call exits 1
 * (SPEC §2: any file failed, the others were still processed). The commands run as processes with
 * a timeout, so a hang fails fast instead of blocking a thread of the test runner.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { copyInto, FIXTURES, makeTempDir, SHARED_SESSIONS } from "./helpers.js";

let cli: ReturnType<typeof buildCli>;
let tmp: ReturnType<typeof makeTempDir>;
let piDir: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  cli = buildCli("not-regular");
  tmp = makeTempDir("not-regular");
  piDir = makeTempDir("not-regular-pi");
}, 120_000);
afterAll(() => {
  cli?.cleanup();
  tmp?.cleanup();
  piDir?.cleanup();
});

/** `condense <args>` as a process, killed after 10 s (a hang shows as signal SIGKILL). */
function condense(...args: string[]): { code: number | null; signal: string | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli.bin, ...args], {
    cwd: tmp.dir,
    encoding: "utf8",
    timeout: 10_000,
    killSignal: "SIGKILL", // a thread blocked on a FIFO keeps the process from ending on SIGTERM
    env: { ...process.env, PI_CODING_AGENT_DIR: piDir.dir, NO_COLOR: "1", CONDENSE_NOW: undefined },
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

function fifo(name: string): string {
  const file = path.join(tmp.dir, name);
  execFileSync("mkfifo", [file]);
  return file;
}

describe("a FIFO as the session", () => {
  for (const args of [["run"], ["run", "--dry-run"], ["metrics"], ["run", "--json"], ["metrics", "--json"]]) {
    it(`${args.join(" ")}: refused at once, as render refuses it`, () => {
      const pipe = fifo(`pipe-${args.join("-").replaceAll("-", "")}.jsonl`);
      const r = condense(...args, pipe);
      expect([r.signal, r.code, r.stderr]).toEqual([null, 2, `error: ${pipe}: cannot read: not a regular file\n`]);
      if (args.includes("--json")) expect(JSON.parse(r.stdout).failures).toEqual([{ session: pipe, error: `${pipe}: cannot read: not a regular file` }]);
      else expect(r.stdout).toBe("");
    });
  }

  for (const jobs of ["1", "2"]) {
    it(`run --jobs ${jobs}: the real file beside it is processed; exit 1`, () => {
      const pipe = fifo(`beside-${jobs}.jsonl`);
      const real = copyInto(tmp.dir, path.join(FIXTURES, "custom-message-before-large-result.jsonl"), `real-${jobs}.jsonl`);
      const before = readFileSync(real);
      const r = condense("run", "--jobs", jobs, pipe, real);
      expect([r.signal, r.code]).toEqual([null, 1]);
      expect(r.stderr).toBe(`error: ${pipe}: cannot read: not a regular file\nerror: 1 of 2 sessions failed (listed above); the others were processed\n`);
      expect(r.stdout).toContain(`wrote ${real}: +4 entries, +3,372 bytes`);
      expect(readFileSync(real).length).toBe(before.length + 3372);
    });
  }

  it("run --dry-run and metrics: the real file beside it is reported; exit 1", () => {
    const pipe = fifo("beside-dry.jsonl");
    const real = copyInto(tmp.dir, path.join(FIXTURES, "custom-message-before-large-result.jsonl"), "real-dry.jsonl");
    const dry = condense("run", "--dry-run", pipe, real);
    expect([dry.signal, dry.code]).toEqual([null, 1]);
    expect(dry.stderr).toBe(`error: ${pipe}: cannot read: not a regular file\nerror: 1 of 2 sessions failed (listed above); the others were processed\n`);
    expect(dry.stdout).toContain("574 → 23 (-96%)");
    const metrics = condense("metrics", real, pipe);
    expect([metrics.signal, metrics.code]).toEqual([null, 1]);
    expect(metrics.stderr).toBe(`error: ${pipe}: cannot read: not a regular file\nerror: 1 of 2 sessions failed (listed above); the others were measured\n`);
    expect(metrics.stdout).toContain("574 → 23 (-96%)");
  });
});

/** A session whose run writes sidecars, undone: the sidecar names it writes are known. */
function spilled(name: string): { file: string; before: Buffer; blobs: string; sidecar: string; spill: string[] } {
  const dir = path.join(tmp.dir, name);
  mkdirSync(dir);
  const file = copyInto(dir, path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), "s.jsonl");
  const before = readFileSync(file);
  const spill = ["--set", "spillThreshold=4096", "--set", "spillPreviewBytes=256"];
  expect(condense("run", file, ...spill).code).toBe(0);
  const blobs = path.join(dir, readdirSync(dir).find((f) => f.endsWith("-blobs")) ?? "");
  const sidecar = path.join(blobs, readdirSync(blobs).sort()[0]);
  expect(condense("undo", file).code).toBe(0);
  return { file, before, blobs, sidecar, spill };
}

describe("a FIFO where condense reads a file beside the session or one the user names", () => {
  it("the session's write journal: refused at once (exit 2), by run and render", () => {
    const real = copyInto(tmp.dir, path.join(FIXTURES, "custom-message-before-large-result.jsonl"), "journal.jsonl");
    const before = readFileSync(real);
    fifo("journal.jsonl.condense-journal");
    for (const command of ["run", "render"]) {
      const r = condense(command, real);
      expect([r.signal, r.code, r.stderr]).toEqual([null, 2, `error: ${real}.condense-journal: cannot read: not a regular file; nothing was changed\n`]);
    }
    expect(readFileSync(real).equals(before)).toBe(true);
  });

  it("--config, metrics --merge, report --html: refused at once (exit 2)", () => {
    const real = copyInto(tmp.dir, path.join(FIXTURES, "custom-message-before-large-result.jsonl"), "named.jsonl");
    const pipe = fifo("named-pipe.json");
    const config = condense("render", "--config", pipe, real);
    expect([config.signal, config.code, config.stderr]).toEqual([null, 2, `error: --config ${pipe}: cannot read: not a regular file\n`]);
    const merge = condense("metrics", "--merge", pipe);
    expect([merge.signal, merge.code, merge.stderr]).toEqual([null, 2, `error: ${pipe}: cannot read: not a regular file\n`]);
    const html = condense("report", "--html", pipe, real);
    expect([html.signal, html.code, html.stderr]).toEqual([
      null,
      2,
      `error: --html ${pipe} already exists and is not a regular file (a device, FIFO or socket); condense does not replace it — name a file (nothing was written)\n`,
    ]);
    // A folder or a missing file there is said in words too, not with the system's message.
    const folder = path.join(tmp.dir, "a-folder.json");
    mkdirSync(folder, { recursive: true });
    const missing = path.join(tmp.dir, "missing.ndjson");
    expect(condense("render", "--config", folder, real).stderr).toBe(`error: --config ${folder}: cannot read: is a directory\n`);
    expect(condense("metrics", "--merge", folder).stderr).toBe(`error: ${folder}: cannot read: is a directory\n`);
    expect(condense("metrics", "--merge", missing).stderr).toBe(`error: ${missing}: cannot read: no such file\n`);
  });

  it("undo, with undo records beside the FIFO: refused at once (exit 2)", () => {
    const pipe = fifo("undone.jsonl");
    const real = copyInto(tmp.dir, path.join(FIXTURES, "custom-message-before-large-result.jsonl"), "undone-real.jsonl");
    expect(condense("run", real).code).toBe(0);
    copyInto(tmp.dir, `${real}.condense-undo`, "undone.jsonl.condense-undo");
    for (const args of [["undo"], ["undo", "--dry-run"]]) {
      const r = condense(...args, pipe);
      expect([r.signal, r.code, r.stderr]).toEqual([null, 2, `error: ${pipe}: cannot read: not a regular file\n`]);
    }
  });

  it("a sidecar run would write: refused at once (exit 1), the session unchanged", () => {
    const { file, before, blobs, sidecar, spill } = spilled("spill");
    mkdirSync(blobs);
    const pipe = fifo(path.relative(tmp.dir, sidecar));
    const r = condense("run", file, ...spill);
    expect([r.signal, r.code, r.stderr]).toEqual([
      null,
      1,
      `error: ${pipe} already exists and is not a regular file; condense does not replace it — nothing was written\n`,
    ]);
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});

describe("what else can take a sidecar's name or its blobs folder's", () => {
  it("a socket or a folder where a sidecar goes: refused (exit 1), neither replaced nor the session changed", async () => {
    const s = spilled("spill-socket");
    mkdirSync(s.blobs);
    // Bound at a short path (a socket's path is limited to ~107 bytes), then moved into place.
    const short = mkdtempSync(path.join(tmpdir(), "sock-"));
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(path.join(short, "s"), resolve));
    renameSync(path.join(short, "s"), s.sidecar);
    try {
      const r = condense("run", s.file, ...s.spill);
      expect([r.signal, r.code, r.stderr]).toEqual([
        null,
        1,
        `error: ${s.sidecar} already exists and is not a regular file; condense does not replace it — nothing was written\n`,
      ]);
      expect(lstatSync(s.sidecar).isSocket()).toBe(true);
      expect(readFileSync(s.file).equals(s.before)).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      rmSync(short, { recursive: true, force: true });
    }
    rmSync(s.sidecar, { force: true });
    mkdirSync(s.sidecar);
    const r = condense("run", s.file, ...s.spill);
    expect([r.signal, r.code, r.stderr]).toEqual([
      null,
      1,
      `error: ${s.sidecar} already exists and is not a regular file; condense does not replace it — nothing was written\n`,
    ]);
    expect(readdirSync(s.blobs)).toEqual([path.basename(s.sidecar)]);
    expect(readFileSync(s.file).equals(s.before)).toBe(true);
  });

  it("a file or a FIFO under the blobs folder's name: refused (exit 1), naming it", () => {
    const s = spilled("spill-blobs");
    writeFileSync(s.blobs, "");
    const expected = `error: ${s.blobs} already exists and is not a folder; condense does not replace it — nothing was written\n`;
    let r = condense("run", s.file, ...s.spill);
    expect([r.signal, r.code, r.stderr]).toEqual([null, 1, expected]);
    rmSync(s.blobs);
    execFileSync("mkfifo", [s.blobs]);
    r = condense("run", s.file, ...s.spill);
    expect([r.signal, r.code, r.stderr]).toEqual([null, 1, expected]);
    expect(lstatSync(s.blobs).isFIFO()).toBe(true);
    expect(readFileSync(s.file).equals(s.before)).toBe(true);
  });
});

describe("the undo records file beside the session, when it is not a regular file", () => {
  for (const kind of ["a folder", "a FIFO", "a link to /dev/null"] as const) {
    it(`${kind}: run and compact refuse before writing (exit 1), the session and it unchanged, no journal left; undo says it cannot read it`, () => {
      const dir = path.join(tmp.dir, `undo-${kind.replace(/\W+/g, "-")}`);
      mkdirSync(dir);
      const file = copyInto(dir, path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), "s.jsonl");
      const before = readFileSync(file);
      const records = `${file}.condense-undo`;
      if (kind === "a folder") mkdirSync(records);
      else if (kind === "a FIFO") execFileSync("mkfifo", [records]);
      else symlinkSync("/dev/null", records);
      for (const command of ["run", "compact"]) {
        const r = condense(command, file);
        expect([command, r.signal, r.code, r.stderr]).toEqual([
          command,
          null,
          1,
          `error: ${records} already exists and is not a regular file; condense does not replace it — nothing was written\n`,
        ]);
        expect(readFileSync(file).equals(before)).toBe(true);
        expect(readdirSync(dir).sort()).toEqual(["s.jsonl", "s.jsonl.condense-undo"]);
      }
      // undo says why it found no record, rather than that none was ever kept there.
      const why = kind === "a folder" ? "is a directory" : "not a regular file";
      const undo = condense("undo", file);
      expect([undo.signal, undo.code, undo.stderr]).toEqual([
        null,
        1,
        `error: ${file}: cannot tell which condense write to undo: ${records}, where the records of the last writes are kept, cannot be read (${why}); nothing was changed\n`,
      ]);
      expect(readFileSync(file).equals(before)).toBe(true);
      const st = lstatSync(records);
      expect(kind === "a folder" ? st.isDirectory() : kind === "a FIFO" ? st.isFIFO() : st.isSymbolicLink()).toBe(true);
    });
  }
});

describe("a Unix socket where condense reads (ENXIO on open), and a folder as the journal", () => {
  it("as the session, the write journal, --config and metrics --merge's input: 'not a regular file', exit 2, naming it", async () => {
    const dir = path.join(tmp.dir, "sockets");
    mkdirSync(dir);
    const file = copyInto(dir, path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl"), "s.jsonl");
    const before = readFileSync(file);
    const short = mkdtempSync(path.join(tmpdir(), "sock-"));
    const servers: ReturnType<typeof createServer>[] = [];
    const socketAt = async (target: string): Promise<string> => {
      const bound = path.join(short, String(servers.length));
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(bound, resolve));
      renameSync(bound, target);
      return target;
    };
    try {
      const session = await socketAt(path.join(dir, "sock.jsonl"));
      const journal = await socketAt(`${file}.condense-journal`);
      const config = await socketAt(path.join(dir, "config.json"));
      const merge = await socketAt(path.join(dir, "part.ndjson"));
      const cases: [string[], string][] = [
        [["run", session], `error: ${session}: cannot read: not a regular file\n`],
        [["render", session], `error: ${session}: cannot read: not a regular file\n`],
        [["metrics", session], `error: ${session}: cannot read: not a regular file\n`],
        [["run", file], `error: ${journal}: cannot read: not a regular file; nothing was changed\n`],
        [["render", file], `error: ${journal}: cannot read: not a regular file; nothing was changed\n`],
        [["run", "--dry-run", "--config", config, file], `error: --config ${config}: cannot read: not a regular file\n`],
        [["metrics", "--merge", merge], `error: ${merge}: cannot read: not a regular file\n`],
      ];
      for (const [args, stderr] of cases) {
        const r = condense(...args);
        expect([args.join(" "), r.signal, r.code, r.stderr]).toEqual([args.join(" "), null, 2, stderr]);
      }
      expect(readFileSync(file).equals(before)).toBe(true);
    } finally {
      for (const server of servers) await new Promise((resolve) => server.close(resolve));
      rmSync(short, { recursive: true, force: true });
    }
    rmSync(`${file}.condense-journal`, { force: true });
    mkdirSync(`${file}.condense-journal`);
    for (const command of ["run", "render"]) {
      const r = condense(command, file);
      expect([command, r.signal, r.code, r.stderr]).toEqual([
        command,
        null,
        2,
        `error: ${file}.condense-journal: cannot read: is a directory; nothing was changed\n`,
      ]);
    }
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});

describe("a FIFO as Pi's models.json or auth.json, which run --model reads", () => {
  for (const name of ["models.json", "auth.json"]) {
    it(`${name}: refused at once (exit 2), naming it; not waited on`, () => {
      const agent = makeTempDir(`not-regular-${name}`);
      try {
        const pipe = path.join(agent.dir, name);
        execFileSync("mkfifo", [pipe]);
        const file = copyInto(tmp.dir, path.join(FIXTURES, "llm-three-batches.jsonl"), `models-${name}.jsonl`);
        const r = spawnSync(process.execPath, [cli.bin, "run", file, "--model", "local/m1", "--dry-run"], {
          cwd: tmp.dir,
          encoding: "utf8",
          timeout: 10_000,
          killSignal: "SIGKILL",
          env: { PATH: process.env.PATH, HOME: agent.dir, PI_CODING_AGENT_DIR: agent.dir, NO_COLOR: "1" },
        });
        expect([r.signal, r.status, r.stderr]).toEqual([null, 2, `error: ${pipe}: cannot read: not a regular file\n`]);
      } finally {
        agent.cleanup();
      }
    });
  }
});

describe("FIFOs condense reads only for extra facts: not waited on", () => {
  it("Pi's models-store.json: run --estimate --model goes on without it (exit 0)", () => {
    const agent = makeTempDir("not-regular-store");
    try {
      execFileSync("mkfifo", [path.join(agent.dir, "models-store.json")]);
      const file = copyInto(tmp.dir, path.join(FIXTURES, "llm-three-batches.jsonl"), "store.jsonl");
      const r = spawnSync(process.execPath, [cli.bin, "run", file, "--model", "anthropic/claude-haiku-4-5", "--estimate", "--json"], {
        cwd: tmp.dir,
        encoding: "utf8",
        timeout: 10_000,
        killSignal: "SIGKILL",
        env: { PATH: process.env.PATH, HOME: agent.dir, PI_CODING_AGENT_DIR: agent.dir, NO_COLOR: "1" },
      });
      expect([r.signal, r.status]).toEqual([null, 0]);
      expect(JSON.parse(r.stdout).sessions[0].dryRun).toBe(true);
    } finally {
      agent.cleanup();
    }
  });

  it("the owner file of a live lock: run reports the lock (exit 1), owner unknown", () => {
    const dir = path.join(tmp.dir, "lock-owner");
    mkdirSync(dir);
    const file = copyInto(dir, path.join(FIXTURES, "llm-three-batches.jsonl"), "s.jsonl");
    const before = readFileSync(file);
    mkdirSync(`${file}.lock`);
    execFileSync("mkfifo", [path.join(`${file}.lock`, "owner.json")]);
    const r = condense("run", file);
    expect([r.signal, r.code]).toEqual([null, 1]);
    expect(r.stderr).toMatch(new RegExp(`^error: ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is locked \\(lock folder .*owner unknown`));
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("the project's .pi/settings.json, read for Pi's session folder: metrics with no session goes on without it (exit 2, none found)", () => {
    const project = path.join(tmp.dir, "project-fifo");
    mkdirSync(path.join(project, ".pi"), { recursive: true });
    execFileSync("mkfifo", [path.join(project, ".pi", "settings.json")]);
    const r = spawnSync(process.execPath, [cli.bin, "metrics"], {
      cwd: project,
      encoding: "utf8",
      timeout: 10_000,
      killSignal: "SIGKILL",
      env: { PATH: process.env.PATH, HOME: piDir.dir, PI_CODING_AGENT_DIR: piDir.dir, NO_COLOR: "1" },
    });
    expect([r.signal, r.status]).toEqual([null, 2]);
    expect(r.stderr).toMatch(/^error: no session given, \$PI_SESSION_FILE is not set, and .* holds no Pi session of /);
  });
});

describe("install-skill with a FIFO where SKILL.md goes", () => {
  it("refused at once (exit 2), with or without --force, the FIFO left", () => {
    const agent = makeTempDir("not-regular-skill");
    try {
      const skill = path.join(agent.dir, "skills", "condense-recover", "SKILL.md");
      mkdirSync(path.dirname(skill), { recursive: true });
      execFileSync("mkfifo", [skill]);
      for (const args of [["install-skill"], ["install-skill", "--force"]]) {
        const r = spawnSync(process.execPath, [cli.bin, ...args], {
          cwd: tmp.dir,
          encoding: "utf8",
          timeout: 10_000,
          killSignal: "SIGKILL",
          env: { PATH: process.env.PATH, HOME: agent.dir, PI_CODING_AGENT_DIR: agent.dir, NO_COLOR: "1" },
        });
        expect([args.join(" "), r.signal, r.status, r.stderr]).toEqual([
          args.join(" "),
          null,
          2,
          `error: ${skill} exists and is not a regular file; condense does not replace it (nothing was written)\n`,
        ]);
      }
      expect(lstatSync(skill).isFIFO()).toBe(true);
    } finally {
      agent.cleanup();
    }
  });
});
