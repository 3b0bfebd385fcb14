/**
 * The warning `run --target extension` and `render` print when the pi-condense extension is not
 * switched on: the extension's entries only shrink what Pi sends when the extension is loaded and
 * enabled; stock Pi sends the summaries (custom messages) and the raw outputs too. (`run --target
 * pi`, the default then, writes Pi's own context edits as well: no warning.)
 */
import { resolve } from "node:path";
import { piCondenseStatus } from "../config/pi-settings.js";
import { peekHeader } from "../session/locate.js";

/**
 * The project folder Pi would resume these sessions in: the `cwd` of a single session's header,
 * else the current folder.
 */
async function projectFolder(sessions: string[]): Promise<string> {
  if (sessions.length === 1) {
    const header = await peekHeader(sessions[0]).catch(() => null);
    if (header && typeof header.cwd === "string" && header.cwd !== "") return header.cwd;
  }
  return resolve(".");
}

/**
 * The warning to show, or null when Pi's settings switch the extension on.
 * @param sessions the session files the command works on (their project decides project settings)
 * @param command what the user ran, to phrase the advice
 */
export async function extensionOffWarning(sessions: string[], command: "run" | "render"): Promise<string | null> {
  const status = piCondenseStatus({ cwd: await projectFolder(sessions) });
  if (status.enabled) return null;
  const install = status.installedAs ? "" : " It does not look installed either: pi install npm:pi-condense.";
  const see =
    command === "render"
      ? " This render shows the context with the extension; --as pi-only shows what Pi sends without it."
      : " Or run with --target pi (what auto picks while the extension is off): run then also writes Pi's own context edits, so Pi sends the pruned context without the extension. condense render --as pi-only shows what Pi sends without it.";
  return (
    `the pi-condense extension is not switched on (${status.reason}): without it Pi sends the pruner ` +
    `summaries and the raw outputs both, so the entries condense run writes make the context larger, not ` +
    `smaller. Switch it on with /pruner on in Pi, or set "contextPrune": { "enabled": true } in ` +
    `${status.settingsPath}.${install}${see}`
  );
}
