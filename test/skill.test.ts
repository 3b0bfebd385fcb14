/**
 * `condense install-skill` writes a skill Pi 1.6 accepts: validated with Pi's own skill loader
 * (pi-coding-agent dist/core/skills.js, loaded by file path — it imports on Node 20): found in the
 * agent dir's skills/ and in <cwd>/.pi/skills, no diagnostics, name and description as written,
 * listed in the system-prompt block. The commands the skill shows run against a condensed session.
 * Also: the recovery-hint texts for native-mode stubs, and their shell quoting, run through bash.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SKILL_DESCRIPTION, SKILL_NAME, skillMarkdown } from "../src/query/skill.js";
import { recoveryCommand, recoveryHint, shellWord } from "../src/context/vocabulary.js";
import { runCli } from "./cli-harness.js";
import { copyInto, FIXTURES, makeTempDir, REPO_ROOT } from "./helpers.js";

let PiSkills: any;
const tmp = makeTempDir("skill");

beforeAll(async () => {
  const url = pathToFileURL(path.join(REPO_ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core/skills.js")).href;
  PiSkills = await import(/* @vite-ignore */ url);
});
afterAll(() => tmp.cleanup());

describe("condense install-skill", () => {
  it("installs into the agent dir's skills/ a skill Pi's loader accepts without diagnostics", async () => {
    const agent = path.join(tmp.dir, "agent");
    mkdirSync(agent);
    const r = await runCli(["install-skill"], { PI_CODING_AGENT_DIR: agent });
    expect(r.code).toBe(0);
    const file = path.join(agent, "skills", SKILL_NAME, "SKILL.md");
    expect(r.stdout).toBe(`${file}\n`);
    expect(readFileSync(file, "utf8")).toBe(skillMarkdown());

    const { skills, diagnostics } = PiSkills.loadSkillsFromDir({ dir: path.join(agent, "skills"), source: "user" });
    expect(diagnostics).toEqual([]);
    expect(skills).toHaveLength(1);
    expect(skills[0]).toMatchObject({ name: SKILL_NAME, description: SKILL_DESCRIPTION, filePath: file, disableModelInvocation: false });
    const prompt = PiSkills.formatSkillsForPrompt(skills);
    expect(prompt).toContain(`<name>${SKILL_NAME}</name>`);
    expect(prompt).toContain(`<location>${file}</location>`);

    // Unchanged on a second run; a different file is refused without --force, replaced with it.
    expect((await runCli(["install-skill", "--json"], { PI_CODING_AGENT_DIR: agent })).stdout).toContain('"written": false');
    writeFileSync(file, "edited\n");
    const refused = await runCli(["install-skill"], { PI_CODING_AGENT_DIR: agent });
    expect([refused.code, refused.stdout]).toEqual([2, ""]);
    expect(refused.stderr).toContain(`${file} exists and differs from this version's skill; pass --force to overwrite it`);
    expect(readFileSync(file, "utf8")).toBe("edited\n");
    expect((await runCli(["install-skill", "--force", "--quiet"], { PI_CODING_AGENT_DIR: agent })).code).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(skillMarkdown());
  });

  it("--project installs into <cwd>/.pi/skills, where Pi's loadSkills finds it as a project skill", async () => {
    const project = path.join(tmp.dir, "project");
    const agent = path.join(tmp.dir, "agent-empty");
    mkdirSync(project);
    const cwd = process.cwd();
    process.chdir(project);
    try {
      const r = await runCli(["install-skill", "--project", "--quiet"], { PI_CODING_AGENT_DIR: agent });
      expect(r.code).toBe(0);
    } finally {
      process.chdir(cwd);
    }
    const file = path.join(project, ".pi", "skills", SKILL_NAME, "SKILL.md");
    expect(existsSync(path.join(agent, "skills"))).toBe(false);
    const { skills, diagnostics } = PiSkills.loadSkills({ cwd: project, agentDir: agent, skillPaths: [], includeDefaults: true });
    expect(diagnostics).toEqual([]);
    expect(skills.map((s: any) => [s.name, s.filePath, s.sourceInfo.scope])).toEqual([[SKILL_NAME, file, "project"]]);
  });

  it("--print writes nothing and prints the file", async () => {
    const agent = path.join(tmp.dir, "agent-print");
    const r = await runCli(["install-skill", "--print"], { PI_CODING_AGENT_DIR: agent });
    expect([r.code, r.stdout, existsSync(agent)]).toEqual([0, skillMarkdown(), false]);
  });

  it("the name and description keep Pi's limits (name a-z0-9 and single inner hyphens, ≤ 64; description ≤ 1024)", () => {
    expect(SKILL_NAME).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    expect(SKILL_NAME.length).toBeLessThanOrEqual(64);
    expect(SKILL_DESCRIPTION.length).toBeLessThanOrEqual(1024);
  });

  it("every condense command in the skill's example block runs on a condensed session", async () => {
    const session = copyInto(tmp.dir, path.join(FIXTURES, "example-session.jsonl"));
    expect((await runCli(["run", session, "--quiet"], { CONDENSE_NOW: "2026-01-01T12:00:00.000Z" })).code).toBe(0);
    const block = /```sh\n([\s\S]*?)```/.exec(skillMarkdown())![1];
    const commands = block
      .split("\n")
      .filter((l) => l.startsWith("condense "))
      .map((l) => l.replace(/\s+#.*$/, ""));
    expect(commands).toEqual(["condense query t3", "condense query t3 t7", "condense query t3 --full", "condense query t3 --json"]);
    for (const command of commands) {
      const args = command.split(" ").slice(1);
      const r = await runCli([...args, "--session", session]);
      // t7 does not exist in this session: named on stderr, exit 1, t3 still printed.
      expect(r.code).toBe(args.includes("t7") ? 1 : 0);
      expect(r.stdout).toContain(args.includes("--json") ? '"ref": "t3"' : "=== t3 ===\n");
    }
  });
});

describe("recovery hint for native-mode stubs", () => {
  it("names condense query with the refs, and --session only when given", () => {
    expect(recoveryCommand("t3")).toBe("condense query t3");
    expect(recoveryCommand(["t3", "t7"])).toBe("condense query t3 t7");
    expect(recoveryCommand("t3", { session: "/home/me/.pi/agent/sessions/--x--/s.jsonl" })).toBe(
      "condense query t3 --session /home/me/.pi/agent/sessions/--x--/s.jsonl",
    );
    expect(recoveryCommand("t3", { session: "/tmp/it's here/s.jsonl" })).toBe("condense query t3 --session '/tmp/it'\\''s here/s.jsonl'");
    expect(recoveryCommand("t3", { full: true, session: "/s.jsonl" })).toBe("condense query t3 --full --session /s.jsonl");
    expect(recoveryHint("t3")).toBe("Full output: `condense query t3` in bash (or context_tree_query).");
    expect(recoveryHint(["t3", "t7"], { full: true })).toBe("Full outputs: `condense query t3 t7 --full` in bash (or context_tree_query).");
    expect(() => recoveryCommand([])).toThrow("recoveryCommand: no ref given");
  });

  it("shell words survive bash unchanged", () => {
    const words = ["t3", "bash_23@1745251200000", "/a b/c.jsonl", "it's", "$HOME", 'a"b', "x;rm -rf y", "tab\there", "ünï"];
    const out = execFileSync("bash", ["--norc", "-c", `printf '%s\\n' ${words.map(shellWord).join(" ")}`], { encoding: "utf8" });
    expect(out).toBe(words.map((w) => `${w}\n`).join(""));
  });

  it("the command with --session, run by bash, prints the stored output (session path with a space and a quote)", async () => {
    const dir = path.join(tmp.dir, "it's a dir");
    mkdirSync(dir);
    const session = copyInto(dir, path.join(FIXTURES, "example-session.jsonl"));
    expect((await runCli(["run", session, "--quiet"], { CONDENSE_NOW: "2026-01-01T12:00:00.000Z" })).code).toBe(0);
    const bin = path.join(REPO_ROOT, "bin", "condense.js");
    if (!existsSync(path.join(REPO_ROOT, "dist", "cli", "main.js"))) throw new Error("dist/ missing: run npm run build");
    const shim = path.join(tmp.dir, "bin");
    mkdirSync(shim, { recursive: true });
    writeFileSync(path.join(shim, "condense"), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} "$@"\n`, { mode: 0o755 });
    const command = recoveryCommand("t3", { session });
    const viaBash = spawnSync("bash", ["--norc", "-c", `${command} --json`], {
      encoding: "utf8",
      env: { ...process.env, PATH: `${shim}:${process.env.PATH}` },
    });
    expect(viaBash.status).toBe(0);
    const direct = await runCli(["query", "t3", "--json", "--session", session]);
    expect(JSON.parse(viaBash.stdout)).toEqual(JSON.parse(direct.stdout));
    expect(JSON.parse(direct.stdout).results[0].record.toolName).toBe("bash");
  });
});
