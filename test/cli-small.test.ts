/**
 * The small items of "output for people" (issue 17), each as a kind: a mistyped command is named
 * as one; the top-level help says what `condense <session>` does; run reports disk growth and the
 * sidecar folders, its wall time (not the sum of the sessions'), a closing count of failed sessions,
 * and its warnings in --json; a project's ignored contextPrune block is named; chain refs print in
 * numeric order.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chainToolRefs } from "../src/chain/compress.js";
import { interruptedLine } from "../src/cli/batch.js";
import { COMMAND_SUMMARIES } from "../src/cli/command-list.js";
import { buildProgram } from "../src/cli/main.js";
import { cutToColumns, spinnerText } from "../src/cli/output.js";
import { suggestCommand } from "../src/cli/suggest.js";
import { copyInto, FIXTURES, runCli, runCliWith, tempDir } from "./cli-capture.js";

const tmp = tempDir("cli-small");
afterAll(tmp.cleanup);
const NOW = { CONDENSE_NOW: "2026-01-01T00:00:00.000Z" };

describe("a mistyped command", () => {
  it("is named as one, not looked up as a session (exit 2)", async () => {
    const r = await runCli("metric");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: unknown command "metric" — did you mean `condense metrics`? (No session goes by that name either.) See condense --help\n');
    const json = await runCli("rendr", "--json");
    expect(JSON.parse(json.stdout).error).toEqual({ message: expect.stringContaining('unknown command "rendr"'), exitCode: 2 });
  });

  it("is told from paths, ids and words far from every command", () => {
    const names = ["render", "query", "metrics", "budget", "compact", "install-skill", "completion"];
    expect(suggestCommand("metric", names)).toBe("metrics");
    expect(suggestCommand("met", names)).toBe("metrics");
    expect(suggestCommand("budgt", names)).toBe("budget");
    expect(suggestCommand("sessions/a.jsonl", names)).toBeUndefined();
    expect(suggestCommand("019dcd91", names)).toBeUndefined();
    expect(suggestCommand("hello", names)).toBeUndefined();
  });

  it("counts two swapped letters as one edit, and run is a command too", async () => {
    const names = ["run", "render", "query", "metrics", "budget", "compact", "undo", "report", "install-skill", "completion"];
    expect(suggestCommand("rnu", names)).toBe("run");
    expect(suggestCommand("runn", names)).toBe("run");
    expect(suggestCommand("rum", names)).toBe("run");
    expect(suggestCommand("redner", names)).toBe("render");
    expect(suggestCommand("qeury", names)).toBe("query");
    expect(suggestCommand("udno", names)).toBe("undo");
    expect(suggestCommand("xyz", names)).toBeUndefined();
    const r = await runCli("rnu", "t.jsonl");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: unknown command "rnu" — did you mean `condense run`? (No session goes by that name either.) See condense --help\n');
  });

  it("is not suggested after an explicit run, nor for an id prefix that names several sessions", async () => {
    const agent = path.join(tmp.dir, "typo-agent");
    const folder = path.join(agent, "sessions", "--x--");
    mkdirSync(folder, { recursive: true });
    const env = { PI_CODING_AGENT_DIR: agent };
    const explicit = await runCliWith(env, "run", "rnu");
    expect([explicit.code, explicit.stderr]).toEqual([
      2,
      `error: rnu: no such file or directory, no glob match, and no session with that id in ${path.join(agent, "sessions")}\n`,
    ]);
    for (const id of ["runA1", "runB2"]) {
      const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/x" };
      writeFileSync(path.join(folder, `2026-01-01T00-00-00-000Z_${id}.jsonl`), `${JSON.stringify(header)}\n`);
    }
    const ambiguous = await runCliWith(env, "ru");
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/^error: ru: session id prefix is ambiguous, 2 sessions match:\n/);
  });

  it("an existing file of that name is still a session", async () => {
    const dir = path.join(tmp.dir, "named");
    mkdirSync(dir);
    copyInto(dir, path.join(FIXTURES, "example-session.jsonl"), "metric");
    // Typed bare in the folder that holds it, as a mistyped command would be.
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const r = await runCli("metric", "--dry-run", "--json");
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).sessions.map((s: { session: string }) => s.session)).toEqual([path.join(dir, "metric")]);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('the options every command takes (README "Commands")', () => {
  it("--json, --quiet and --raw on every command but completion, which prints its script and refuses them", async () => {
    const program = await buildProgram({ code: 0 });
    const without = program.commands
      .filter((c) => !["--json", "--quiet", "--raw"].every((flag) => c.options.some((o) => o.long === flag)))
      .map((c) => c.name());
    expect(without).toEqual(["completion"]);
    const r = await runCli("completion", "bash", "--json");
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([2, "error: unknown option '--json'"]);
    // Given --json, even this usage error is one JSON document (README "JSON output").
    expect(JSON.parse(r.stdout)).toEqual({ error: { message: "unknown option '--json'", exitCode: 2 } });
  });
});

describe("the top-level help", () => {
  it("says that condense <session> runs the main job", async () => {
    const r = await runCli("--help");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: condense [command] [options]   (no command: condense <session...> runs `run`)");
    expect(r.stdout).toContain("The main job is the default command: `condense <session...>` is `condense run <session...>`");
  });

  it("shows defaults and choices unquoted, and no empty-list default, in every command's help", async () => {
    const commands = Object.keys(COMMAND_SUMMARIES);
    expect(commands).toEqual(
      expect.arrayContaining(["run", "render", "query", "metrics", "budget", "report", "compact", "undo", "install-skill", "completion"]),
    );
    for (const command of commands) {
      const r = await runCli(command, "--help");
      expect(r.code, command).toBe(0);
      const text = r.stdout.replace(/\s+/g, " ");
      expect(text, command).not.toContain('default: "');
      expect(text, command).not.toContain("default: []");
      expect(text, command).not.toContain('choices: "');
    }
    const help = async (command: string) => (await runCli(command, "--help")).stdout.replace(/\s+/g, " ");
    const run = await help("run");
    expect(run).toContain("parallel summarizer calls (default: 4)");
    expect(run).toContain("(choices: auto, pi, extension, default: auto)");
    expect(run).toContain("--set <key=value> set any configuration key (repeatable) --");
    expect(await help("report")).toContain("largest tool outputs listed per session (default: 10)");
    expect(await help("render")).toContain("text transcript or the JSON message array (choices: text, json, default: text)");
    expect(await help("completion")).toContain("the shell (choices: bash, zsh, fish)");
  });
});

describe("run's report", () => {
  it("names disk growth and the sidecar folder; --json carries them", async () => {
    const file = copyInto(tmp.dir, path.join(FIXTURES, "spill-and-duplicate.jsonl"));
    const size = statSync(file).size;
    const r = await runCliWith({ ...NOW, COLUMNS: "200" }, file, "--set", "spillThreshold=4000", "--json");
    const doc = JSON.parse(r.stdout).sessions[0];
    const blobs = path.join(tmp.dir, "0199c0de-0000-7000-8000-0000000000a1-blobs");
    const sidecar = readFileSync(path.join(blobs, "call_1_1767261602300.txt"));
    expect(doc.disk).toEqual({ fileBytes: size, appendBytes: statSync(file).size - size, sidecarFiles: 1, sidecarBytes: sidecar.length, sidecarDirs: [blobs] });
    // The same on a dry run, from the human report, against the dry run's --json (stock Pi's stubs
    // name the session's path, so the append's size depends on where the copy lies).
    const again = copyInto(path.join(tmp.dir, "named"), path.join(FIXTURES, "spill-and-duplicate.jsonl"), "dry.jsonl");
    const dry = JSON.parse((await runCliWith(NOW, again, "--set", "spillThreshold=4000", "--dry-run", "--json")).stdout).sessions[0];
    expect(dry.disk.fileBytes).toBe(size);
    expect(dry.disk.sidecarBytes).toBe(sidecar.length);
    const human = await runCliWith({ ...NOW, COLUMNS: "200" }, again, "--set", "spillThreshold=4000", "--dry-run");
    const kb = (n: number) => `${Math.round(n / 1024)} KB`;
    expect(human.stdout).toContain(
      `the session file would grow by ${kb(dry.disk.appendBytes)} (+${((100 * dry.disk.appendBytes) / size).toFixed(1)}%); 1 sidecar file (${kb(sidecar.length)}) in ${path.join(tmp.dir, "named", "0199c0de-0000-7000-8000-0000000000a1-blobs")}`,
    );
  });

  it("says 'written' and 'grew' only when something was written; --output grows the output, not the session", async () => {
    const dir = path.join(tmp.dir, "written");
    mkdirSync(dir);
    const file = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"));
    const size = statSync(file).size;
    const env = { ...NOW, COLUMNS: "400" };
    const lines = (stdout: string) => stdout.trimEnd().split("\n").slice(-3);
    const whom = "for the pi-condense extension (target extension: --target extension)";
    const run = (...args: string[]) => runCliWith(env, ...args, "--target", "extension");

    const dry = await run(file, "--dry-run");
    const dryDoc = JSON.parse((await run(file, "--dry-run", "--json")).stdout).sessions[0];
    const pct = (bytes: number) => `${Math.round(bytes / 1024)} KB (+${((100 * bytes) / size).toFixed(1)}%)`;
    expect(lines(dry.stdout).slice(1)).toEqual([`the session file would grow by ${pct(dryDoc.disk.appendBytes)}`, `${file}: would be written ${whom}`]);

    const output = path.join(dir, "out.jsonl");
    const toOutput = await run(file, "--output", output);
    const added = statSync(output).size - size;
    expect(lines(toOutput.stdout)).toEqual([
      `${output} holds the session's bytes + ${pct(added)}; the session file is untouched`,
      `${file}: written to ${output} ${whom}`,
      `wrote ${output}: the bytes of ${file} + ${dryDoc.entriesAppended} entries (+${added.toLocaleString("en-US")} bytes); ${file} is untouched`,
    ]);
    expect(statSync(file).size).toBe(size);

    expect((await run(file, "-q")).code).toBe(0);
    const noop = await run(file);
    expect(lines(noop.stdout).slice(1)).toEqual(["nothing was written: the session file is unchanged", `${file}: nothing to write ${whom}`]);
    const noopDry = await run(file, "--dry-run");
    expect(lines(noopDry.stdout).slice(1)).toEqual(["nothing would be written: the session file is unchanged", `${file}: nothing to write ${whom}`]);

    const other = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"), "other.jsonl");
    const both = await run(file, other, "--jobs", "1");
    expect(both.stdout).toContain(`\nall sessions ${whom}: 1 written, 1 with nothing to write\n`);
    expect(both.stdout).not.toMatch(/grew by 0 B/);
  });

  it("prints the command's wall time and counts the failed sessions once more at the end", async () => {
    const good = copyInto(path.join(tmp.dir, "named"), path.join(FIXTURES, "example-session.jsonl"), "good.jsonl");
    const empty = path.join(tmp.dir, "named", "empty.jsonl");
    writeFileSync(empty, "");
    const started = Date.now();
    const r = await runCli(good, empty, "--dry-run", "--jobs", "1");
    const elapsed = (Date.now() - started) / 1000;
    expect(r.code).toBe(1);
    const seconds = Number(/ · (\d+\.\d\d) s\n/.exec(r.stdout)?.[1]);
    expect(seconds).toBeLessThanOrEqual(elapsed + 0.01);
    expect(r.stderr.trimEnd().split("\n").pop()).toBe("error: 1 of 2 sessions failed (listed above); the others were processed");
    const json = JSON.parse((await runCli(good, empty, "--dry-run", "--json", "--jobs", "1")).stdout);
    // wallMs is the command's: at least the longest session's, not their sum.
    expect(json.wallMs).toBeGreaterThanOrEqual(Math.max(...json.sessions.map((s: { wallMs: number }) => s.wallMs)));
  });
});

describe("a project's contextPrune block", () => {
  it("is named as ignored by the extension and by condense, with the way to use it", async () => {
    const project = path.join(tmp.dir, "project");
    mkdirSync(path.join(project, ".pi"), { recursive: true });
    writeFileSync(path.join(project, ".pi", "settings.json"), JSON.stringify({ contextPrune: { minBatchChars: 10 } }));
    const file = path.join(project, "s.jsonl");
    const lines = readFileSync(path.join(FIXTURES, "example-session.jsonl"), "utf8").split("\n");
    lines[0] = JSON.stringify({ ...JSON.parse(lines[0]), cwd: project });
    writeFileSync(file, lines.join("\n"));
    const settings = path.join(project, ".pi", "settings.json");
    for (const command of [["metrics"], ["budget"], ["render"], ["run", "--dry-run"]]) {
      const r = await runCli(command[0], file, ...command.slice(1));
      expect(r.stderr, command.join(" ")).toContain(
        `warning: ${settings} has a "contextPrune" block, which neither the pi-condense extension nor condense reads: both take contextPrune from `,
      );
      expect(r.stderr).toContain(`Move the keys there, or pass --config ${settings} to condense`);
    }
    // Passed explicitly, it is read.
    const withIt = JSON.parse((await runCli("run", file, "--dry-run", "--json", "--config", settings)).stdout).sessions[0];
    const without = JSON.parse((await runCli("run", file, "--dry-run", "--json")).stdout).sessions[0];
    expect(withIt.batches.skippedTrivial).toBeLessThan(without.batches.skippedTrivial);
  });
});

describe("chain refs", () => {
  it("are listed in numeric order, each once", () => {
    const refs: Record<string, string> = { a: "t112", b: "t113", c: "t12", d: "t9", e: "t12" };
    expect(chainToolRefs({ shortRefFor: (k: string) => refs[k] }, ["a", "b", "c", "d", "e"])).toEqual(["t9", "t12", "t112", "t113"]);
  });
});

describe("the line after Ctrl-C", () => {
  it("names what is left, or that nothing is (the interrupt came after the last write finished)", () => {
    expect(interruptedLine({ done: 2, failed: 0, untouched: 3 }, "write")).toBe(
      "interrupted: 2 of 5 sessions done, 3 untouched (nothing was written to them); run the same command again to continue",
    );
    expect(interruptedLine({ done: 1, failed: 0, untouched: 0 }, "write")).toBe(
      "interrupted: 1 of 1 sessions done: the interrupt came after the last one finished; nothing is left to do",
    );
    expect(interruptedLine({ done: 3, failed: 1, untouched: 0 }, "read")).toBe(
      "interrupted: 3 of 4 sessions done, 1 failed: the interrupt came after the last one finished; nothing is left to do",
    );
  });
});

describe("spinner lines are cut in terminal columns, wide characters counting 2", () => {
  it("a Korean folder name cut from the start fits the room it is given", () => {
    const file = "/archive/세션-2-pimono-before-compaction.migrated-v3.jsonl";
    expect(cutToColumns(file, 30, "start")).toBe("…-compaction.migrated-v3.jsonl");
    expect(cutToColumns("세션-2-pimono", 8, "end")).toBe("세션-2-…");
    expect(cutToColumns("세션", 4, "end")).toBe("세션");
    // 80 columns: frame, space, text and 3 spare columns for a ^C echo.
    const line = spinnerText(`report 7/24 — ${"세".repeat(60)}`, 80);
    expect(line).toBe(`report 7/24 — ${"세".repeat(30)}…`);
  });
});
