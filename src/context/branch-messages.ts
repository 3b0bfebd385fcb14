/**
 * The branch as a message list, not compaction-aware: message entries and `custom_message`
 * entries (as role `custom`), in branch order — what the extension's chain detector and metrics read.
 */
import type { AgentMessage, SessionEntry } from "../session/types.js";
import { entryToMessages } from "./projection.js";

export function branchMessages(branch: SessionEntry[]): { message: AgentMessage; entry: SessionEntry }[] {
  const out: { message: AgentMessage; entry: SessionEntry }[] = [];
  for (const entry of branch) {
    if (entry.type !== "message" && entry.type !== "custom_message") continue;
    for (const message of entryToMessages(entry)) out.push({ message, entry });
  }
  return out;
}
