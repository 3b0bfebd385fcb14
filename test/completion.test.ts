/**
 * Shell completion generated from the commander program: the spec read from it, the bash script
 * driven through its completion function with COMP_WORDS / COMP_CWORD set (bash is always here),
 * and the zsh and fish scripts checked by those shells when installed (fish also completes
 * command lines with `complete -C`); a missing shell skips with the reason in the test name.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Option } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completionScript } from "../src/cli/completion/scripts.js";
import { completionSpec } from "../src/cli/completion/spec.js";
import { buildProgram } from "../src/cli/main.js";
import { runCli } from "./cli-harness.js";
import { makeTempDir } from "./helpers.js";

const program = await buildProgram({ code: 0 });
const spec = completionSpec(program);
/** The commands registered in cli/main.ts, in order, and commander's implicit `help`. */
const registered = [...program.commands.map((c) => c.name()), "help"];
const tmp = makeTempDir("completion");
const work = path.join(tmp.dir, "work");
const scripts: Record<string, string> = {};

const has = (shell: string) => spawnSync(shell, ["--version"], { stdio: "ignore" }).status === 0;
const hasZsh = has("zsh");
const hasFish = has("fish");

beforeAll(async () => {
  mkdirSync(path.join(work, "sub"), { recursive: true });
  writeFileSync(path.join(work, "a session.jsonl"), "");
  writeFileSync(path.join(work, "b.jsonl"), "");
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await runCli(["completion", shell]);
    expect(r.code).toBe(0);
    scripts[shell] = path.join(tmp.dir, `condense.${shell}`);
    writeFileSync(scripts[shell], r.stdout);
  }
});
afterAll(() => tmp.cleanup());

describe("completion spec read from the commander program", () => {
  it("lists every command, the default command and option choices", () => {
    expect(spec.name).toBe("condense");
    expect(spec.defaultCommand).toBe("run");
    expect(spec.commands.map((c) => c.name)).toEqual(registered);
    expect(registered).toEqual(expect.arrayContaining(["run", "render", "query", "metrics", "budget", "install-skill", "completion", "help"]));
    expect(spec.options.map((o) => o.flags)).toEqual([
      ["-V", "--version"],
      ["-h", "--help"],
    ]);
    const render = spec.commands.find((c) => c.name === "render")!;
    expect(render.options.find((o) => o.flags.includes("--format"))).toMatchObject({ takesValue: true, value: "choices", choices: ["text", "json"] });
    expect(render.args).toBe("file");
    const query = spec.commands.find((c) => c.name === "query")!;
    expect(query.args).toBe("none");
    expect(query.options.find((o) => o.flags.includes("--session"))).toMatchObject({ value: "file" });
    expect(spec.commands.find((c) => c.name === "completion")).toMatchObject({ args: "choices", argChoices: ["bash", "zsh", "fish"] });
  });

  it("an unknown shell is a usage error", async () => {
    const r = await runCli(["completion", "tcsh"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error: command-argument value 'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish.\n(run with --help for usage)\n",
    );
    expect(r.stdout).toBe("");
  });
});

/** Run the bash completion function of `script` for `words` (the last one is being completed); COMPREPLY, one per line. */
function bashComplete(words: string[], scriptFile = scripts.bash): string[] {
  const script = [
    `source ${JSON.stringify(scriptFile)}`,
    `COMP_WORDS=(${words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    "_condense",
    `printf '%s\\n' "\${COMPREPLY[@]}"`,
  ].join("\n");
  const r = spawnSync("bash", ["--norc", "--noprofile", "-c", script], { cwd: work, encoding: "utf8" });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return r.stdout.split("\n").filter((l) => l !== "");
}

describe("bash", () => {
  it("is registered for condense", () => {
    const r = spawnSync("bash", ["--norc", "-c", `source ${JSON.stringify(scripts.bash)}; complete -p condense`], { encoding: "utf8" });
    expect(r.stdout.trim()).toBe("complete -F _condense condense");
  });

  it("completes subcommands, and session files for the default command", () => {
    expect(bashComplete(["condense", "re"])).toEqual(["render", "report"]);
    expect(bashComplete(["condense", "in"])).toEqual(["install-skill"]);
    expect(bashComplete(["condense", ""]).sort()).toEqual(["a session.jsonl", "b.jsonl", "sub", ...registered].sort());
  });

  it("completes every registered command by its name, and each command's options", () => {
    for (const command of program.commands) {
      const name = command.name();
      expect(bashComplete(["condense", name]), name).toContain(name);
      const flags = command.options.filter((o) => !o.hidden).flatMap((o) => [o.short, o.long].filter((f): f is string => !!f));
      expect(bashComplete(["condense", name, "-"]).sort(), name).toEqual([...flags, "-h", "--help"].sort());
    }
  });

  it("a command added to the program completes without touching the scripts", async () => {
    const grown = await buildProgram({ code: 0 });
    grown
      .command("frobnicate")
      .description("a command the scripts have never seen")
      .argument("[sessions...]")
      .option("--widget <file>", "a file")
      .addOption(new Option("--mode <mode>", "a choice").choices(["fast", "slow"]));
    const file = path.join(tmp.dir, "grown.bash");
    writeFileSync(file, completionScript("bash", completionSpec(grown), "0.0.0"));
    expect(bashComplete(["condense", "frob"], file)).toEqual(["frobnicate"]);
    expect(bashComplete(["condense", "frobnicate", "--"], file)).toEqual(["--widget", "--mode", "--help"]);
    expect(bashComplete(["condense", "frobnicate", "--mode", ""], file)).toEqual(["fast", "slow"]);
    expect(bashComplete(["condense", "frobnicate", "--widget", "a"], file)).toEqual(["a session.jsonl"]);
    expect(bashComplete(["condense", "frobnicate", "b"], file)).toEqual(["b.jsonl"]);
    expect(bashComplete(["condense", "help", "fr"], file)).toEqual(["frobnicate"]);
  });

  it("completes options per command, with the default command's at top level", () => {
    expect(bashComplete(["condense", "query", "t3", "--"])).toEqual([
      "--session",
      "--full",
      "--save-images",
      "--force",
      "--format",
      "--json",
      "--quiet",
      "--raw",
      "--help",
    ]);
    expect(bashComplete(["condense", "render", "--f"])).toEqual(["--format"]);
    expect(bashComplete(["condense", "--dry"])).toEqual(["--dry-run"]);
    expect(bashComplete(["condense", "b.jsonl", "--ou"])).toEqual(["--output"]);
    expect(bashComplete(["condense", "metrics", "--max-c"])).toEqual(["--max-chain-share", "--max-context"]);
  });

  it("completes option values: choices, files, nothing for free values", () => {
    expect(bashComplete(["condense", "render", "--format", ""])).toEqual(["text", "json"]);
    expect(bashComplete(["condense", "render", "--format", "=", "j"])).toEqual(["json"]);
    expect(bashComplete(["condense", "query", "t3", "--format", ""])).toEqual(["text", "tool"]);
    expect(bashComplete(["condense", "render", "--as", ""])).toEqual(["auto", "extension", "pi-only"]);
    expect(bashComplete(["condense", "--summarizer", "l"])).toEqual(["llm"]);
    expect(bashComplete(["condense", "metrics", "--tokenizer", ""])).toEqual(["chars4", "o200k"]);
    expect(bashComplete(["condense", "query", "--session", "a"])).toEqual(["a session.jsonl"]);
    expect(bashComplete(["condense", "run", "--model", ""])).toEqual([]);
    // after a value-taking option's value, positionals complete again
    expect(bashComplete(["condense", "render", "--format", "json", "b"])).toEqual(["b.jsonl"]);
  });

  it("completes positionals: refs get nothing, completion gets shells, help gets commands", () => {
    expect(bashComplete(["condense", "query", ""])).toEqual([]);
    expect(bashComplete(["condense", "completion", ""])).toEqual(["bash", "zsh", "fish"]);
    expect(bashComplete(["condense", "help", "m"])).toEqual(["metrics"]);
    expect(bashComplete(["condense", "budget", "s"])).toEqual(["sub"]);
  });
});

describe.skipIf(!hasZsh)(`zsh${hasZsh ? "" : " (skipped: zsh is not installed)"}`, () => {
  it("parses, and registers _condense for condense after compinit", () => {
    expect(spawnSync("zsh", ["-n", scripts.zsh], { encoding: "utf8" }).status).toBe(0);
    const r = spawnSync(
      "zsh",
      [
        "-f",
        "-c",
        `autoload -U compinit && compinit -u -d ${JSON.stringify(path.join(tmp.dir, "zcompdump"))} && source ${JSON.stringify(scripts.zsh)} && print -r -- $_comps[condense]`,
      ],
      { encoding: "utf8" },
    );
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("_condense");
  });
});

describe.skipIf(!hasFish)(`fish${hasFish ? "" : " (skipped: fish is not installed)"}`, () => {
  /** fish's own completion of `line`: the candidates, descriptions dropped. */
  function fishComplete(line: string): string[] {
    const r = spawnSync("fish", ["--no-config", "-c", `source ${JSON.stringify(scripts.fish)}; complete -C ${JSON.stringify(line)}`], {
      cwd: work,
      encoding: "utf8",
    });
    expect(r.stderr).toBe("");
    return r.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split("\t")[0]);
  }

  it("parses and completes commands, options, choices and files", () => {
    expect(spawnSync("fish", ["--no-config", "-n", scripts.fish]).status).toBe(0);
    expect(fishComplete("condense ren")).toEqual(["render"]);
    expect(fishComplete("condense render --format ")).toEqual(["json", "text"]);
    expect(fishComplete("condense query --s")).toEqual(["--save-images", "--session"]);
    expect(fishComplete("condense query t3 ")).toEqual([]);
    expect(fishComplete("condense render ")).toEqual(["a session.jsonl", "b.jsonl", "sub/"]);
    expect(fishComplete("condense --dry")).toEqual(["--dry-run"]);
    expect(fishComplete("condense ")).toEqual(expect.arrayContaining(registered));
  });
});

it("each script names the version and its install line", () => {
  const version = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8")).version;
  expect(completionScript("bash", spec, version).split("\n").slice(0, 3)).toEqual([
    `# bash completion for condense ${version}, generated by \`condense completion bash\`.`,
    "# Install: condense completion bash > ~/.local/share/bash-completion/completions/condense",
    "#      or: echo 'source <(condense completion bash)' >> ~/.bashrc",
  ]);
  expect(completionScript("zsh", spec, version).split("\n")[0]).toBe("#compdef condense");
  expect(completionScript("fish", spec, version)).toContain("# Install: condense completion fish > ~/.config/fish/completions/condense.fish\n");
});
