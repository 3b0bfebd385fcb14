import type { Command } from "commander";
import { UsageError } from "../../util/errors.js";
import { type ExitState, withCommonOptions } from "../main.js";

export function registerQuery(program: Command, _exit: ExitState): void {
  const cmd = program.command("query").description("(not built yet)");
  withCommonOptions(cmd).action(async () => {
    throw new UsageError("query is not built yet");
  });
}
