/**
 * `condense completion bash|zsh|fish`: print a shell completion script generated from this
 * program's commander definition (completion/spec.ts, completion/scripts.ts). Install lines are in
 * the script's header and the README.
 */
import { Argument, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { completionScript, SHELLS, type Shell } from "../completion/scripts.js";
import { completionSpec } from "../completion/spec.js";
import type { ExitState } from "../options.js";
import { Output } from "../output.js";
import { packageVersion } from "../version.js";

export function registerCompletion(program: Command, _exit: ExitState): void {
  program
    .command("completion")
    .description(COMMAND_SUMMARIES.completion.description)
    .addArgument(new Argument("<shell>", "the shell").choices(SHELLS))
    .addHelpText(
      "after",
      "\nInstall:\n" +
        "  bash: condense completion bash > ~/.local/share/bash-completion/completions/condense\n" +
        `  zsh:  condense completion zsh > "\${fpath[1]}/_condense"\n` +
        "  fish: condense completion fish > ~/.config/fish/completions/condense.fish",
    )
    .action((shell: Shell) => {
      new Output({}).stdout.write(completionScript(shell, completionSpec(program), packageVersion()));
    });
}
