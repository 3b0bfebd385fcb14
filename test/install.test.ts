/**
 * The package installs like any CLI: `npm pack` (in a copy of the checkout, so this checkout's dist/
 * is left alone) holds only the compiled code, bin, README, LICENSE and package.json;
 * `npm install -g --prefix <tmp>` of that tarball puts a working `condense` on PATH, which — run
 * from a folder outside the checkout — prints its version, condenses a copy of the example session,
 * recovers a pruned output byte-exact (by --session, by Pi's session folder from the session's cwd,
 * and by $PI_SESSION_FILE), and prints the same metrics and report as the in-process CLI.
 * Dependencies come from the npm cache `npm ci` filled (`--prefer-offline`); no audit, no fund.
 */
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cwdFolderName } from "../src/session/locate.js";
import { runCli } from "./cli-harness.js";
import { FIXTURES, makeTempDir, REPO_ROOT } from "./helpers.js";

const tmp = makeTempDir("install");
const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8"));
const prefix = path.join(tmp.dir, "prefix");
const binDir = path.join(prefix, "bin");
let tarball = "";
let packedFiles: string[] = [];
const timings: Record<string, number> = {};

/** The environment of an npm child: without the npm_config_* that `npm test` exported (prefix, global...), same cache. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  if (process.env.npm_config_cache) env.npm_config_cache = process.env.npm_config_cache;
  return env;
}

function npm(args: string[], cwd: string): string {
  const r = spawnSync("npm", args, { cwd, env: npmEnv(), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`npm ${args.join(" ")} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The installed `condense`, found on PATH, run in `cwd` (outside the checkout). */
function condense(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const base = npmEnv();
  delete base.PI_SESSION_FILE;
  return spawnSync("condense", args, {
    cwd,
    encoding: "utf8",
    env: { ...base, PATH: `${binDir}${path.delimiter}${process.env.PATH}`, NO_COLOR: "1", ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** Text of the tool result answering `toolCallId` in a session file, read with JSON.parse only. */
function originalOutput(file: string, toolCallId: string): string {
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line);
    const m = entry.type === "message" ? entry.message : null;
    if (m?.role === "toolResult" && m.toolCallId === toolCallId)
      return m.content
        .filter((c: any) => c.type === "text")
        .map((c: any) => c.text)
        .join("\n");
  }
  throw new Error(`no result for ${toolCallId} in ${file}`);
}

beforeAll(() => {
  // A copy of the checkout with its node_modules linked: `npm pack` there runs prepack/prepare
  // (clean build) as a release would, without touching this checkout's dist/.
  let t = Date.now();
  const src = path.join(tmp.dir, "src");
  cpSync(REPO_ROOT, src, {
    recursive: true,
    filter: (p) => !/^(node_modules|dist|\.git|\.condense-example|tmp)$/.test(path.relative(REPO_ROOT, p).split(path.sep)[0]),
  });
  symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(src, "node_modules"), "dir");
  const packed = JSON.parse(npm(["pack", "--json", "--pack-destination", tmp.dir, "--loglevel=error"], src));
  tarball = path.join(tmp.dir, packed[0].filename);
  packedFiles = packed[0].files.map((f: { path: string }) => f.path).sort();
  timings.pack = Date.now() - t;

  t = Date.now();
  npm(["install", "-g", "--prefix", prefix, tarball, "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], tmp.dir);
  timings.install = Date.now() - t;
}, 240_000);

afterAll(() => {
  process.stderr.write(`install.test timings (ms): ${JSON.stringify(timings)}\n`);
  tmp.cleanup();
});

describe("npm pack + npm install -g of the tarball", () => {
  it("the tarball holds only package.json, README, LICENSE, bin and compiled JavaScript", () => {
    expect(path.basename(tarball)).toBe(`condense-cli-${pkg.version}.tgz`);
    const other = packedFiles.filter((f) => !/^dist\/.+\.js$/.test(f));
    expect(other).toEqual(["LICENSE", "README.md", "bin/condense.js", "package.json"]);
    expect(packedFiles).toContain("dist/cli/main.js");
    expect(packedFiles).toContain("dist/cli/worker.js");
    // one .js per .ts source, nothing stale
    const sources = execFileSync("git", ["ls-files", "src"], { cwd: REPO_ROOT, encoding: "utf8" })
      .split("\n")
      .filter((f) => f.endsWith(".ts"));
    if (sources.length > 0) {
      const fromSources = new Set(sources.map((f) => f.replace(/^src\//, "dist/").replace(/\.ts$/, ".js")));
      for (const f of packedFiles.filter((f) => f.startsWith("dist/"))) expect(fromSources.has(f), f).toBe(true);
    }
  });

  it("condense is on PATH and prints the package version", () => {
    const r = condense(["--version"], tmp.dir);
    expect([r.status, r.stdout, r.stderr]).toEqual([0, `${pkg.version}\n`, ""]);
  });

  it("condenses a copy of the example session; query recovers the output byte-exact, from the session's cwd too", () => {
    const work = path.join(tmp.dir, "work");
    const agent = path.join(tmp.dir, "agent");
    mkdirSync(work);
    // The session as Pi stores it for `work`: header cwd rewritten, file in the per-cwd folder.
    const lines = readFileSync(path.join(FIXTURES, "example-session.jsonl"), "utf8").split("\n");
    const header = JSON.parse(lines[0]);
    lines[0] = JSON.stringify({ ...header, cwd: work });
    const folder = path.join(agent, "sessions", cwdFolderName(work));
    mkdirSync(folder, { recursive: true });
    const session = path.join(folder, `2026-01-01T10-00-00-000Z_${header.id}.jsonl`);
    writeFileSync(session, lines.join("\n"));
    const env = { PI_CODING_AGENT_DIR: agent, CONDENSE_NOW: "2026-01-01T12:00:00.000Z" };

    const run = condense(["--quiet"], work, env);
    expect([run.status, run.stderr]).toEqual([0, ""]);

    const byFlag = condense(["query", "t3", "--json", "--session", session], tmp.dir, env);
    expect(byFlag.status).toBe(0);
    const result = JSON.parse(byFlag.stdout).results[0];
    expect(result.ref).toBe("t3");
    const original = originalOutput(session, result.record.toolCallId);
    expect(original.length).toBeGreaterThan(500);
    expect(result.output).toBe(original);

    // From the session's working directory, no --session: Pi's folder for that cwd.
    const fromCwd = condense(["query", "t3"], work, env);
    expect([fromCwd.status, fromCwd.stderr]).toEqual([0, ""]);
    expect(fromCwd.stdout.endsWith(`\n${original}\n`)).toBe(true);
    expect(fromCwd.stdout.startsWith("=== t3 ===\n")).toBe(true);

    // As from Pi's bash tool: $PI_SESSION_FILE names the session, whatever the cwd.
    const fromPi = condense(["query", "t3", "--json"], tmp.dir, { ...env, PI_CODING_AGENT_DIR: path.join(tmp.dir, "nowhere"), PI_SESSION_FILE: session });
    expect(fromPi.status).toBe(0);
    expect(JSON.parse(fromPi.stdout).results[0].output).toBe(original);
  });

  it("metrics --json from the installed binary equals the in-process CLI's", async () => {
    const session = path.join(tmp.dir, "metrics.jsonl");
    cpSync(path.join(FIXTURES, "example-session.jsonl"), session);
    const ran = condense([session, "--quiet", "--json"], tmp.dir, { CONDENSE_NOW: "2026-01-01T12:00:00.000Z" });
    expect(ran.status).toBe(0);
    const run = JSON.parse(ran.stdout).sessions[0];
    expect(run.context.after.tokens).toBeLessThan(run.context.before.tokens);
    const installed = condense(["metrics", session, "--json"], tmp.dir);
    expect(installed.status).toBe(0);
    const json = JSON.parse(installed.stdout);
    expect(json.schema).toBe("condense.metrics/2");
    expect(json.sessions.map((s: any) => s.session)).toEqual([session]);
    // What Pi sends now is what run said it would be; another run would change nothing.
    expect(json.sessions[0].context.before).toEqual(run.context.after);
    expect(json.sessions[0].context.after).toEqual(run.context.after);
    const inProcess = await runCli(["metrics", session, "--json"]);
    expect(json).toEqual(JSON.parse(inProcess.stdout));
  });

  it("report --html from the installed binary inlines the installed uPlot and embeds what the in-process CLI reports", async () => {
    const session = path.join(tmp.dir, "report.jsonl");
    cpSync(path.join(FIXTURES, "example-session.jsonl"), session);
    const page = path.join(tmp.dir, "report.html");
    const env = { CONDENSE_NOW: "2026-01-01T12:00:00.000Z" };
    const r = condense(["report", session, "--html", page], tmp.dir, env);
    expect(r.status, r.stderr).toBe(0);
    const html = readFileSync(page, "utf8");
    expect(html).toContain(readFileSync(path.join(prefix, "lib/node_modules/condense-cli/node_modules/uplot/dist/uPlot.iife.min.js"), "utf8"));
    const embedded = /<script type="application\/json" id="condense-report">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
    const inProcess = await runCli(["report", session, "--json"], env);
    expect(JSON.parse(embedded)).toEqual(JSON.parse(inProcess.stdout));
  });

  it("install-skill and completion work from the installed binary", () => {
    const agent = path.join(tmp.dir, "agent-skill");
    mkdirSync(agent);
    const r = condense(["install-skill"], tmp.dir, { PI_CODING_AGENT_DIR: agent });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${path.join(agent, "skills", "condense-recover", "SKILL.md")}\n`);
    const c = condense(["completion", "bash"], tmp.dir);
    expect([c.status, c.stdout.split("\n")[0]]).toEqual([0, `# bash completion for condense ${pkg.version}, generated by \`condense completion bash\`.`]);
  });
});
