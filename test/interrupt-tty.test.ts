/**
 * Ctrl-C typed into a real terminal (tmux) while `condense run` waits on a model (the local test
 * server answering slowly, or not at all), with and without the spinner, for one session and for an
 * archive: exit 130, the bytes of every file not done identical to before, no lock left, and one
 * line that says so — for an archive, how many sessions were done and how many left untouched.
 * A second Ctrl-C ends the process at once. The same without a terminal (SIGINT from a parent).
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { startFakeLlmServer } from "./fake-llm-server.mjs";
import { copyInto, makeTempDir, SHARED_SESSIONS } from "./helpers.js";
import { grownFiles, hasTmux, sleep, startInTty, type TtyRun, waitFor, watchCli } from "./tty-support.js";

const SOURCE = path.join(SHARED_SESSIONS, "kimchi-statusline.v3.jsonl");
/** A frame of ora's default spinner (dots). */
const SPINNER_FRAME = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const LARGE = path.join(SHARED_SESSIONS, "pimono-before-compaction.migrated-v3.jsonl");

describe.skipIf(!hasTmux)("Ctrl-C in a terminal", () => {
  let server: Awaited<ReturnType<typeof startFakeLlmServer>>;
  let cli: ReturnType<typeof buildCli>;
  let tmp: ReturnType<typeof makeTempDir>;
  const runs: TtyRun[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startFakeLlmServer();
    cli = buildCli("interrupt-tty");
    tmp = makeTempDir("interrupt-tty");
    writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    writeFileSync(
      path.join(tmp.dir, "models.json"),
      JSON.stringify({ providers: { local: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "k", models: [{ id: "m1" }] } } }),
    );
    env = { PI_CODING_AGENT_DIR: tmp.dir, CONDENSE_CACHE_DIR: path.join(tmp.dir, "cache") };
  }, 120_000);
  afterAll(async () => {
    for (const r of runs) r.kill();
    await server?.close();
    cli?.cleanup();
    tmp?.cleanup();
  });

  const start = (name: string, args: string[], extraEnv: Record<string, string> = {}): TtyRun => {
    const run = startInTty(name, tmp.dir, [process.execPath, cli.bin, ...args], { ...env, ...extraEnv });
    runs.push(run);
    return run;
  };
  // The terminal echoes the interrupt character as "^C" where the cursor was.
  const interruptLines = (screen: string) =>
    screen
      .split("\n")
      .map((l) => l.replace(/^(\^C)+/, ""))
      .filter((l) => /interrupted/.test(l));

  for (const quiet of [false, true]) {
    it(`run --model${quiet ? " -q (no spinner)" : " (spinner)"}: exit 130, bytes identical, one line, no lock`, async () => {
      server.setPlan(() => ({ stall: true }));
      server.requests.length = 0;
      const file = copyInto(tmp.dir, SOURCE, `single-${quiet}.jsonl`);
      const before = readFileSync(file);
      const run = start(`single-${quiet}`, ["run", file, "--model", "local/m1", ...(quiet ? ["-q"] : [])]);
      if (!quiet) await run.waitFor("the spinner", () => run.screen().includes("summarizing with local/m1"));
      await run.waitFor("the model requests", () => server.requests.length >= 4);
      run.keys("C-c");
      expect(await run.exited()).toBe(130);
      expect(readFileSync(file).equals(before)).toBe(true);
      expect(existsSync(`${file}.lock`)).toBe(false);
      expect(interruptLines(run.screen())).toEqual([`error: ${file}: interrupted; nothing was written`]);
    });
  }

  it("an archive: the sessions done stay done, the others are byte-identical, one summary line at the end", async () => {
    server.setPlan(() => ({ delayMs: 60 }));
    const folder = path.join(tmp.dir, "archive");
    mkdirSync(folder);
    const files = Array.from({ length: 6 }, (_, i) => copyInto(folder, SOURCE, `s${i + 1}.jsonl`));
    const before = new Map(files.map((f) => [f, readFileSync(f)]));
    const changed = () => files.filter((f) => !readFileSync(f).equals(before.get(f) as Buffer));
    const sizesBefore = new Map(files.map((f) => [f, statSync(f).size]));
    const run = start("archive", ["run", folder, "--model", "local/m1", "--jobs", "2"]);
    // Polled by size (stat): a read here would hold the file open just as condense checks it.
    await run.waitFor("a first session written", () => grownFiles(files, sizesBefore).length >= 1, 60_000);
    run.keys("C-c");
    expect(await run.exited()).toBe(130);
    const done = changed();
    const lines = interruptLines(run.screen());
    expect(lines, run.screen()).toEqual([
      `error: interrupted: ${done.length} of 6 sessions done, ${6 - done.length} untouched (nothing was written to them); run the same command again to continue`,
    ]);
    expect(done.length).toBeLessThan(6);
    // The summary is the last thing printed.
    expect(interruptLines(run.screen().trimEnd().split("\n").pop() ?? "")).toEqual(lines);
    for (const f of files) {
      expect(existsSync(`${f}.lock`)).toBe(false);
      // Done: the original bytes plus complete entries.
      if (done.includes(f))
        expect(
          readFileSync(f)
            .subarray(0, (before.get(f) as Buffer).length)
            .equals(before.get(f) as Buffer),
        ).toBe(true);
    }
    // Continuing: a rerun does the rest and leaves the done ones alone.
    const sizes = new Map(done.map((f) => [f, readFileSync(f).length]));
    const rerun = start("archive-rerun", ["run", folder, "--model", "local/m1", "--jobs", "2", "-q"]);
    expect(await rerun.exited(60_000)).toBe(0);
    for (const f of files) expect(readFileSync(f).length).toBeGreaterThan((before.get(f) as Buffer).length);
    for (const [f, size] of sizes) expect(readFileSync(f).length).toBe(size);
  }, 120_000);

  it("run --dry-run over an archive: the same closing line, which says a dry run writes nothing", async () => {
    server.setPlan(() => ({ delayMs: 60 }));
    server.requests.length = 0;
    const folder = path.join(tmp.dir, "dry-archive");
    mkdirSync(folder);
    const files = Array.from({ length: 6 }, (_, i) => copyInto(folder, SOURCE, `d${i + 1}.jsonl`));
    const before = new Map(files.map((f) => [f, readFileSync(f)]));
    const run = start("dry-archive", ["run", folder, "--dry-run", "--no-cache", "--model", "local/m1", "--jobs", "2"]);
    await run.waitFor("model requests", () => server.requests.length >= 12, 60_000);
    run.keys("C-c");
    expect(await run.exited()).toBe(130);
    const lines = interruptLines(run.screen());
    expect(lines).toHaveLength(1);
    const m = /^error: interrupted: (\d+) of 6 sessions done, (\d+) not done; a dry run writes nothing$/.exec(lines[0]);
    expect(m, lines[0]).not.toBeNull();
    expect(Number(m?.[1]) + Number(m?.[2])).toBe(6);
    expect(Number(m?.[2])).toBeGreaterThan(0);
    for (const f of files) expect(readFileSync(f).equals(before.get(f) as Buffer)).toBe(true);
  }, 120_000);

  // The read-only commands and compact, on an archive of one large shared session 24 times:
  // Ctrl-C once the progress line counts a session done.
  const READS: [string, string[], string, string][] = [
    ["metrics", [], "metrics", " not done (left out above)"],
    ["report", ["--html", "page.html"], "report", " not done; the page was not written"],
    ["compact", ["--dry-run"], "compacting", " not done; a dry run writes nothing"],
    ["compact", [], "compacting", " untouched (nothing was written to them); run the same command again to continue"],
  ];
  for (const [command, extra, progress, tail] of READS) {
    // CI saw the progress line never count a session done, for two causes: ora, the spinner, was
    // loaded lazily and its loading waited on the work until the end (fixed in output.ts/batch.ts,
    // tested in progress-line.test.ts); and the runner's CI variable reached the terminal, where
    // ora then draws nothing (tty-support.ts keeps it out, tested in tty-env.test.ts). Once more on
    // a failure all the same; a failed try's wait prints its screen to stderr, so it is in the log
    // even when the second passes.
    it(`${[command, ...extra].join(" ")}: exit 130 and one closing line "interrupted: N of M sessions done, …"`, { timeout: 120_000, retry: 1 }, async () => {
      const name = `${command}${extra.join("")}`.replace(/[^a-z]/g, "");
      // A long folder name: the progress line is as wide as the terminal allows, where the `^C`
      // echo would wrap it and leave half of it on screen.
      const folder = path.join(tmp.dir, `large-${name}-${"x".repeat(120)}`);
      rmSync(folder, { recursive: true, force: true }); // an earlier try's (a retried test)
      mkdirSync(folder);
      // Copies for the command that writes, else hard links to one copy (one file on disk).
      const writes = command === "compact" && extra.length === 0;
      const first = copyInto(folder, LARGE, "l01.jsonl");
      const files = [first, ...Array.from({ length: 23 }, (_, i) => path.join(folder, `l${String(i + 2).padStart(2, "0")}.jsonl`))];
      for (const f of files.slice(1)) writes ? copyFileSync(first, f) : linkSync(first, f);
      const before = new Map(files.map((f) => [f, readFileSync(f)]));
      const run = start(`large-${name}`, [command, folder, "--jobs", "1", ...extra]);
      await run.waitFor("a session done", () => new RegExp(`${progress} [1-9]\\d*/24`).test(run.screen()), 60_000);
      run.keys("C-c");
      expect(await run.exited(60_000)).toBe(130);
      const lines = interruptLines(run.screen());
      expect(lines).toHaveLength(1);
      const m = new RegExp(`^error: interrupted: (\\d+) of 24 sessions done, (\\d+)${tail.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`).exec(lines[0]);
      expect(m, lines[0]).not.toBeNull();
      const [done, left] = [Number(m?.[1]), Number(m?.[2])];
      expect(done + left).toBe(24);
      expect(left).toBeGreaterThan(0);
      // The closing line is the last thing printed, and the progress line is gone: no spinner frame is left.
      const screenLines = run.screen().trimEnd().split("\n");
      expect(interruptLines(screenLines.at(-1) ?? "")).toEqual(lines);
      expect(screenLines.filter((l) => SPINNER_FRAME.test(l))).toEqual([]);
      const changed = files.filter((f) => !readFileSync(f).equals(before.get(f) as Buffer));
      expect(changed).toHaveLength(writes ? done : 0);
      if (command === "report") expect(existsSync(path.join(tmp.dir, "page.html"))).toBe(false);
    });
  }

  it("metrics -q (no spinner): the ^C echo is cleared, so the partial table starts in column 1", async () => {
    const folder = path.join(tmp.dir, "quiet-metrics");
    mkdirSync(folder);
    const first = copyInto(folder, LARGE, "q01.jsonl");
    for (let i = 2; i <= 24; i++) linkSync(first, path.join(folder, `q${String(i).padStart(2, "0")}.jsonl`));
    const watch = watchCli(tmp.dir, "quiet-metrics");
    const run = start("quiet-metrics", ["metrics", folder, "--jobs", "1", "-q"], watch.env);
    // Nothing is printed to wait for: type Ctrl-C once condense handles it and a session is done
    // (the second one is being read). Typed earlier, node dies of it: no partial table to look at.
    await run.waitFor("condense's SIGINT handler and a session done", () => watch.handlesSigint() && watch.sessionsRead().length >= 2, 60_000);
    run.keys("C-c");
    expect(await run.exited(60_000)).toBe(130);
    const screen = run.screen();
    expect(screen).not.toContain("^C");
    expect(screen.split("\n").filter((l) => l.includes("┌"))).toEqual([expect.stringMatching(/^┌─/)]);
    expect(interruptLines(screen)).toHaveLength(1);
  }, 120_000);

  it("a second Ctrl-C exits at once, whatever the first one is waiting for", async () => {
    // The shared handler of every writing command, around work that never looks at the signal.
    const batch = path.join(path.dirname(cli.bin), "../dist/cli/batch.js");
    const script = `const m = await import(${JSON.stringify(batch)}); m.interruptOnSigint(); console.log("ready"); setInterval(() => {}, 1000);`;
    const direct = startInTty("twice-direct", tmp.dir, [process.execPath, "--input-type=module", "-e", script], env);
    runs.push(direct);
    await direct.waitFor("ready", () => direct.screen().includes("ready"));
    direct.keys("C-c");
    await sleep(700);
    expect(direct.status()).toBeNull();
    direct.keys("C-c");
    expect(await direct.exited(5_000)).toBe(130);
  });

  it("two quick Ctrl-C during model calls: exit 130, nothing written", async () => {
    server.setPlan(() => ({ stall: true }));
    server.requests.length = 0;
    const file = copyInto(tmp.dir, SOURCE, "twice.jsonl");
    const before = readFileSync(file);
    // Not from the cache: the archive's rerun above stored answers for this very session.
    const run = start("twice-run", ["run", file, "--model", "local/m1", "--no-cache"]);
    await run.waitFor("the model requests", () => server.requests.length >= 1);
    run.keys("C-c");
    run.keys("C-c");
    expect(await run.exited()).toBe(130);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });
});

describe("Ctrl-C without a terminal (SIGINT from the parent)", () => {
  let server: Awaited<ReturnType<typeof startFakeLlmServer>>;
  let cli: ReturnType<typeof buildCli>;
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(async () => {
    server = await startFakeLlmServer({ plan: () => ({ delayMs: 60 }) });
    cli = buildCli("interrupt-pipe");
    tmp = makeTempDir("interrupt-pipe");
    writeFileSync(path.join(tmp.dir, "settings.json"), JSON.stringify({ contextPrune: { enabled: true } }));
    writeFileSync(
      path.join(tmp.dir, "models.json"),
      JSON.stringify({ providers: { local: { baseUrl: server.openaiBaseUrl, api: "openai-completions", apiKey: "k", models: [{ id: "m1" }] } } }),
    );
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    cli?.cleanup();
    tmp?.cleanup();
  });

  /** The built CLI as a child with piped output, Pi's folder the test's. */
  const spawnCli = (args: string[], env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, [cli.bin, ...args], {
      env: { ...process.env, PI_CODING_AGENT_DIR: tmp.dir, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    return { pid: child.pid, kill: (signal: NodeJS.Signals) => child.kill(signal), exited, output: () => ({ stdout, stderr }) };
  };

  it("the interrupt's signal takes one listener per call in flight, also in a worker thread: no MaxListenersExceededWarning", async () => {
    const folder = path.join(tmp.dir, "many-calls");
    mkdirSync(folder);
    for (let i = 1; i <= 4; i++) copyInto(folder, SOURCE, `c${i}.jsonl`);
    // A worker's warnings reach stderr asynchronously and can be lost when the process exits: a
    // preload in every thread writes each warning to a file as it is emitted.
    const warnings = path.join(tmp.dir, "warnings.txt");
    const preload = path.join(tmp.dir, "record-warnings.cjs");
    writeFileSync(
      preload,
      'const { appendFileSync } = require("node:fs"); const { isMainThread } = require("node:worker_threads");\n' +
        `process.on("warning", (w) => appendFileSync(${JSON.stringify(warnings)}, \`\${isMainThread ? "main" : "worker"}: \${w.name}\\n\`));\n`,
    );
    // Up to 16 calls wait at once in each of the two threads. No answer comes before 27 are in
    // flight (so both threads have more than 10), then each after 300 ms: the worker thread's calls
    // can start seconds after this thread's (under load, 2 s), and a fixed delay alone let this
    // thread's first 16 be answered before the worker's began (19 at once, seen). Should 27 never
    // be in flight, the answers come after 15 s (within the 20 s idle timeout of a call) and the
    // count below says how many there were.
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const fallback = setTimeout(release, 15_000);
    server.setPlan(async () => {
      if (server.maxActive >= 27) release();
      await gate;
      return { delayMs: 300 };
    });
    try {
      const child = spawnCli(["run", folder, "--dry-run", "--no-cache", "--model", "local/m1", "--jobs", "2", "--concurrency", "16", "-q"], {
        NODE_OPTIONS: `--require ${preload}`,
      });
      expect(await child.exited).toBe(0);
      expect(server.maxActive).toBeGreaterThanOrEqual(27); // both threads had more than 10 calls in flight
      expect(existsSync(warnings) ? readFileSync(warnings, "utf8") : "").toBe("");
      expect(child.output().stderr).toBe("");
    } finally {
      clearTimeout(fallback);
      server.setPlan(() => ({ delayMs: 60 }));
    }
  }, 120_000);

  // A retry (as the terminal archive tests have) gets a folder of its own.
  it("an archive: exit 130, one summary line on stderr, untouched files identical, --json names them", { timeout: 120_000, retry: 1 }, async () => {
    const folder = mkdtempSync(path.join(tmp.dir, "archive-"));
    const files = Array.from({ length: 5 }, (_, i) => copyInto(folder, SOURCE, `p${i + 1}.jsonl`));
    const before = new Map(files.map((f) => [f, readFileSync(f)]));
    const changed = () => files.filter((f) => !readFileSync(f).equals(before.get(f) as Buffer));
    const sizesBefore = new Map(files.map((f) => [f, statSync(f).size]));
    const child = spawnCli(["run", folder, "--model", "local/m1", "--jobs", "1", "--json"], { CONDENSE_CACHE_DIR: path.join(tmp.dir, "cache") });
    // Polled by size (stat): a read here would hold the file open just as condense checks it.
    await waitFor("a first session written", () => grownFiles(files, sizesBefore).length >= 1, 60_000);
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    const done = changed();
    const { stdout, stderr } = child.output();
    const doc = JSON.parse(stdout);
    // Seen once in a full run: one session counted failed. A cause found since: this test read the
    // sessions while polling, and condense refuses a session another process has open (now polled
    // by size). Should a session's batches fail instead, their reasons:
    const failedBatches = doc.sessions.filter((r: { batches: { failed: number } }) => r.batches.failed > 0);
    expect(failedBatches.map((r: { session: string; failures: unknown }) => [r.session, r.failures])).toEqual([]);
    expect(doc.interrupted.done).toBe(done.length);
    expect(doc.interrupted.untouched.sort()).toEqual(files.filter((f) => !done.includes(f)).sort());
    expect(doc.failures).toEqual([]);
    expect(stderr).toBe("");
    for (const f of doc.interrupted.untouched) expect(readFileSync(f).equals(before.get(f) as Buffer)).toBe(true);
    expect(readdirSync(folder).filter((n) => n.endsWith(".lock"))).toEqual([]);
  });

  it("metrics --json: exit 130, the document holds the sessions measured and names the others", async () => {
    // 200 names for one large session (hard links: one file on disk), far more than are read before the interrupt.
    const folder = path.join(tmp.dir, "metrics-json");
    mkdirSync(folder);
    const first = copyInto(folder, LARGE, "m000.jsonl");
    const files = [first, ...Array.from({ length: 199 }, (_, i) => path.join(folder, `m${String(i + 1).padStart(3, "0")}.jsonl`))];
    for (const f of files.slice(1)) linkSync(first, f);
    const watch = watchCli(tmp.dir, "metrics-json");
    const child = spawnCli(["metrics", folder, "--jobs", "1", "--json"], watch.env);
    // Once condense handles SIGINT and a session is done (the second one is being read); before
    // its handler is installed, node dies of the signal (no exit code, no document).
    await waitFor("condense's SIGINT handler and a session done", () => watch.handlesSigint() && watch.sessionsRead().length >= 2, 60_000);
    child.kill("SIGINT");
    expect(await child.exited).toBe(130);
    const { stdout, stderr } = child.output();
    expect(stderr).toBe("");
    const doc = JSON.parse(stdout);
    expect(doc.interrupted.done).toBe(doc.sessions.length);
    expect(doc.sessions.length).toBeGreaterThan(0);
    expect(doc.interrupted.untouched.length).toBeGreaterThan(0);
    expect([...doc.sessions.map((s: { session: string }) => s.session), ...doc.interrupted.untouched].sort()).toEqual(files);
  }, 120_000);
});
