import type { Command } from "commander";
import { UsageError } from "../../util/errors.js";
import { type ExitState, withCommonOptions } from "../main.js";

export function registerBudget(program: Command, _exit: ExitState): void {
  const cmd = program.command("budget").description("(not built yet)");
  withCommonOptions(cmd).action(async () => {
    throw new UsageError("budget is not built yet");
  });
}
