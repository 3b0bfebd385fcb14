/**
 * Pi 1.6's token estimates for compaction (pi-coding-agent `dist/core/compaction/compaction.js`:
 * `estimateTokens`, `estimateContextTokens`, `estimateProjectedContextTokens`). They decide the cut
 * point (keepRecentTokens), `tokensBefore` and the auto-compaction trigger, so they follow Pi's
 * rules exactly, rounding included: `ceil(chars / 4)` per message, an image counted as 4800 chars.
 */
import { getCurrentSystemMessage } from "@earendil-works/pi-ai";
import type { ProjectedEntry } from "../context/projection.js";
import { hasValidUsage, usageTokens } from "../context/usage.js";
import { piEstimateTokens } from "../context/size.js";
import type { AgentMessage, AssistantMessage, SessionEntry } from "../session/types.js";

/**
 * Estimated tokens of one message (Pi's `estimateTokens`): `ceil(chars / 4)` over text, thinking,
 * tool-call names plus their JSON arguments, tool-result and custom content (images 4800 chars
 * each), a `!command` and its output, or a summary; a system message adds its sections and the
 * JSON of the tools it adds. Unknown roles count 0. The one implementation is `context/size.ts`.
 */
export const estimateMessageTokens: (message: AgentMessage) => number = piEstimateTokens;

/** Pi's context estimate: the last trusted usage plus estimates of the messages after it, or estimates of everything. */
export interface ContextEstimate {
  tokens: number;
  /** Provider-reported tokens of the last trusted usage (0 without one). */
  usageTokens: number;
  /** Estimated tokens of the messages after that usage (all messages without one). */
  trailingTokens: number;
  /** Index in the message list of the message whose usage counts, or null. */
  lastUsageIndex: number | null;
}

/**
 * Pi's `estimateContextTokens`: the usage of the last assistant message Pi trusts (not aborted or
 * errored, more than 0 tokens; `totalTokens` or the sum of its parts) plus the estimates of the
 * messages after it; without such a message, the sum of every message's estimate.
 */
export function estimateContextTokens(messages: AgentMessage[]): ContextEstimate {
  let usageIndex = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "assistant" && hasValidUsage(m)) {
      usageIndex = i;
      break;
    }
  }
  if (usageIndex < 0) {
    let estimated = 0;
    for (const message of messages) estimated += estimateMessageTokens(message);
    return { tokens: estimated, usageTokens: 0, trailingTokens: estimated, lastUsageIndex: null };
  }
  const reported = usageTokens((messages[usageIndex] as AssistantMessage).usage);
  let trailing = 0;
  for (let i = usageIndex + 1; i < messages.length; i++) trailing += estimateMessageTokens(messages[i]);
  return { tokens: reported + trailing, usageTokens: reported, trailingTokens: trailing, lastUsageIndex: usageIndex };
}

/**
 * Pi's `estimateProjectedContextTokens`: {@link estimateContextTokens} over the projected messages,
 * unless a `context_edit` or `compaction` entry on the branch comes after the entry whose usage it
 * trusts (that usage describes a context that no longer exists) — then the estimate of every
 * projected message, the system messages replaced by their replay (`getCurrentSystemMessage`).
 *
 * @param projected the projection of `branch` ({@link ProjectedEntry} list)
 * @param branch the active branch, root → leaf
 */
export function estimateProjectedContextTokens(projected: ProjectedEntry[], branch: SessionEntry[]): ContextEstimate {
  const messages = projected.flatMap((e) => e.messages);
  const estimate = estimateContextTokens(messages);
  if (estimate.lastUsageIndex !== null) {
    let index = 0;
    let usageEntryId: string | undefined;
    for (const entry of projected) {
      const next = index + entry.messages.length;
      if (estimate.lastUsageIndex < next) {
        usageEntryId = entry.sourceEntry.id;
        break;
      }
      index = next;
    }
    const usageEntryIndex = usageEntryId ? branch.findIndex((e) => e.id === usageEntryId) : -1;
    let latestInvalidating = -1;
    for (let i = branch.length - 1; i >= 0; i--) {
      if (branch[i].type === "context_edit" || branch[i].type === "compaction") {
        latestInvalidating = i;
        break;
      }
    }
    if (usageEntryIndex > latestInvalidating) return estimate;
  }
  const system = getCurrentSystemMessage(messages);
  let tokens = system ? estimateMessageTokens(system as AgentMessage) : 0;
  for (const message of messages) if (message.role !== "system") tokens += estimateMessageTokens(message);
  return { tokens, usageTokens: 0, trailingTokens: tokens, lastUsageIndex: null };
}
