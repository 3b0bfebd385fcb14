import type { Command } from "commander";
import { UsageError } from "../../util/errors.js";
import { type ExitState, withCommonOptions } from "../main.js";

export function registerRun(program: Command, _exit: ExitState): void {
  const cmd = program.command("run").description("(not built yet)");
  withCommonOptions(cmd).action(async () => {
    throw new UsageError("run is not built yet");
  });
}
