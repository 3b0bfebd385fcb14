/**
 * The warning `run --target extension` and `render --as extension` print when the pi-condense
 * extension is not installed and switched on: the extension's entries only shrink what Pi sends
 * when the extension is loaded and enabled; stock Pi sends the summaries (custom messages) and the
 * raw outputs too (`run --target pi`, the default then, writes Pi's own context edits as well: no
 * warning), and `render` then shows stock Pi's context unless asked for the extension's. And the warning of the
 * commands that read the pruning configuration when a project's settings hold a `contextPrune` block.
 */
import { join, resolve } from "node:path";
import { ignoredProjectContextPrune, piCondenseStatus } from "../config/pi-settings.js";
import { agentDir, peekHeader } from "../session/locate.js";
import type { Output } from "./output.js";

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
 * The warning to show, or null when Pi's settings load the extension and switch it on (what
 * `run --target auto` checks: then Pi sends the extension's render).
 * @param sessions the session files the command works on (their project decides project settings)
 * @param command what the user ran: `run` (with `--target extension`: its entries alone make what
 *   stock Pi sends larger), or `render` (with `--as extension`: a context this Pi does not send)
 */
export async function extensionOffWarning(sessions: string[], command: "run" | "render"): Promise<string | null> {
  const status = piCondenseStatus({ cwd: await projectFolder(sessions) });
  if (status.enabled && status.installedAs) return null;
  const state = status.enabled ? `does not look installed (it is switched on in ${status.settingsPath})` : `is not switched on (${status.reason})`;
  const switchOn = status.enabled ? "" : ` Switch it on with /pruner on in Pi, or set "contextPrune": { "enabled": true } in ${status.settingsPath}.`;
  const install = status.installedAs
    ? ""
    : status.enabled
      ? " Install it with pi install npm:pi-condense."
      : " It does not look installed either: pi install npm:pi-condense.";
  if (command === "render") {
    return (
      `this render shows the context Pi sends with the pi-condense extension, but the extension ${state}: ` +
      `Pi sends what condense render shows without --as (stock Pi's context, --as pi-only).${switchOn}${install}`
    );
  }
  return (
    `the pi-condense extension ${state}: without it Pi sends the pruner ` +
    `summaries and the raw outputs both, so the entries condense run writes make the context larger, not ` +
    `smaller.${switchOn}${install} Or run with --target pi (what auto picks while the extension is off): run then also ` +
    "writes Pi's own context edits, so Pi sends the pruned context without the extension. condense render --as pi-only shows what Pi sends without it."
  );
}

/**
 * One warning per project of these sessions whose `.pi/settings.json` holds a `contextPrune`
 * block: Pi merges project settings over the global ones, but the extension — and so condense —
 * reads `contextPrune` from the global settings.json only.
 * @param sessions the session files a command works on (their headers name their projects)
 * @param globalPath the global settings.json
 */
export async function projectSettingsWarnings(sessions: string[], globalPath: string): Promise<string[]> {
  const folders = new Set<string>();
  for (const session of sessions) {
    const header = await peekHeader(session).catch(() => null);
    if (header && typeof header.cwd === "string" && header.cwd !== "") folders.add(header.cwd);
  }
  const warnings: string[] = [];
  for (const folder of folders) {
    const file = ignoredProjectContextPrune(folder);
    if (file) {
      warnings.push(
        `${file} has a "contextPrune" block, which neither the pi-condense extension nor condense reads: both take ` +
          `contextPrune from ${globalPath} only. Move the keys there, or pass --config ${file} to condense`,
      );
    }
  }
  return warnings;
}

/** Print {@link projectSettingsWarnings} for the sessions of a command that reads the pruning configuration. */
export async function warnIgnoredProjectSettings(out: Output, sessions: string[]): Promise<void> {
  for (const w of await projectSettingsWarnings(sessions, join(agentDir(), "settings.json"))) out.warn(w);
}
