/**
 * `condense install-skill`: install the `condense-recover` Pi skill (query/skill.ts), so the agent
 * inside a pruned session knows to run `condense query <ref>`. Pi 1.6 loads skills from
 * `<agent dir>/skills/` (all projects; `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`) and
 * `<cwd>/.pi/skills/` (this project, `--project`). `--print` writes nothing and prints the file. A
 * SKILL.md that differs from this version's (older, or edited) is kept unless `--force`; a missing
 * agent folder is an error (its `skills/<name>/` folders are created).
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { SKILL_NAME, skillMarkdown, skillPath } from "../../query/skill.js";
import { agentDir } from "../../session/locate.js";
import { readRegularFileSync } from "../../util/files.js";
import { writeFileAtomic } from "../../session/sidecars.js";
import { errnoWords, RuntimeFailure, UsageError } from "../../util/errors.js";
import { Output } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions } from "../options.js";

interface InstallSkillOptions extends CommonOptions {
  project?: boolean;
  print?: boolean;
  force?: boolean;
}

export function registerInstallSkill(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("install-skill")
    .description(COMMAND_SUMMARIES["install-skill"].description)
    .option("--project", "install for this project (<cwd>/.pi/skills) instead of for every project (the agent dir's skills/)")
    .option("--print", "print SKILL.md on stdout and write nothing")
    .option("--force", "overwrite a SKILL.md that differs from this version's (an older version, or edited)")
    .addHelpText("after", "\nExamples:\n  condense install-skill\n  condense install-skill --project\n  condense install-skill --print > SKILL.md");
  withCommonOptions(cmd).action(async (options: InstallSkillOptions) => {
    const out = new Output(options);
    const text = skillMarkdown();
    if (options.print) {
      if (options.json) out.printJson({ name: SKILL_NAME, path: null, written: false, content: text });
      else out.stdout.write(text);
      return;
    }
    const path = skillPath(!!options.project);
    // The skill's own folders are created; Pi's agent folder is not (a mistyped $PI_CODING_AGENT_DIR would be).
    if (!options.project && !existsSync(agentDir())) {
      throw new UsageError(
        `Pi's agent folder ${agentDir()} does not exist (Pi creates it on its first run; is $PI_CODING_AGENT_DIR right?); nothing was written — or use --project`,
      );
    }
    const written = await installSkill(path, text, !!options.force);
    if (options.json) out.printJson({ name: SKILL_NAME, path, written, content: text });
    else {
      out.print(path);
      out.info(
        written
          ? `installed the ${SKILL_NAME} skill; Pi loads it in new sessions (or after /reload)`
          : `the ${SKILL_NAME} skill is already installed and up to date`,
      );
    }
  });
}

/** The installed SKILL.md's text, or undefined when there is none; a FIFO or folder there is refused, not waited on. */
function readExisting(path: string): string | undefined {
  try {
    return readRegularFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ENOTREG" || code === "EISDIR") {
      throw new UsageError(`${path} exists and is not a regular file; condense does not replace it (nothing was written)`);
    }
    throw new RuntimeFailure(`cannot read ${path}: ${errnoWords(error)}`);
  }
}

/**
 * Write `text` to `path` atomically unless it already holds exactly that.
 * @returns true when written, false when the file was already up to date
 * @throws UsageError when the file differs and `force` is false; RuntimeFailure when it cannot be written
 */
async function installSkill(path: string, text: string, force: boolean): Promise<boolean> {
  const existing = readExisting(path);
  if (existing === text) return false;
  if (existing !== undefined && !force) {
    throw new UsageError(`${path} exists and differs from this version's skill; pass --force to overwrite it (or --print to compare)`);
  }
  try {
    await writeFileAtomic(path, text);
  } catch (error) {
    throw new RuntimeFailure(`cannot write ${path}: ${(error as Error).message}`);
  }
  return true;
}
