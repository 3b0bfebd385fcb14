/**
 * When Pi 1.6 compacts on its own (`AgentSession._checkCompaction`,
 * `_compactBeforeNextAssistantResponse`, `shouldCompact` in pi-coding-agent; docs/design.md
 * §10 "Trigger"), with auto-compaction on (`compaction.enabled`):
 * - overflow: the last assistant message failed with a context-overflow error (pi-ai's
 *   `isContextOverflow`: `stopReason: "error"` and an `errorMessage` such as "prompt is too long");
 * - threshold: before a request, Pi's estimate of the projected context exceeds
 *   `contextWindow − reserveTokens`.
 */
import { getCurrentSystemMessage, isContextOverflow, type AssistantMessage } from "@earendil-works/pi-ai";
import { entryToMessages, projectEntries, type ProjectedEntry } from "../context/projection.js";
import { hasValidUsage, usageTokens } from "../context/usage.js";
import { isMessageEntry, type AgentMessage, type SessionEntry } from "../session/types.js";
import { estimateMessageTokens, estimateProjectedContextTokens } from "./estimate.js";
import type { CompactionSettings } from "./settings.js";

/** The assistant message an entry holds, or undefined. */
function assistantOf(entry: SessionEntry): AssistantMessage | undefined {
  return isMessageEntry(entry) && entry.message.role === "assistant" ? entry.message : undefined;
}

/** The last assistant message of the branch, with its entry, or null. */
export function lastAssistant(branch: SessionEntry[]): { entry: SessionEntry; message: AssistantMessage } | null {
  for (let i = branch.length - 1; i >= 0; i--) {
    const m = assistantOf(branch[i]);
    if (m) return { entry: branch[i], message: m };
  }
  return null;
}

/** True when the branch's last assistant message is a context-overflow error (Pi's overflow case). */
export function endsInOverflow(branch: SessionEntry[]): boolean {
  const last = lastAssistant(branch);
  return !!last && last.message.stopReason === "error" && isContextOverflow(last.message);
}

/** Pi's `shouldCompact`: auto-compaction on and `contextTokens > contextWindow − reserveTokens`. */
export function shouldCompact(contextTokens: number, contextWindow: number, settings: CompactionSettings): boolean {
  return settings.enabled && contextTokens > contextWindow - settings.reserveTokens;
}

export interface TriggerCheck {
  /** Pi's estimate of the projected context (tokens). */
  contextTokens: number;
  contextWindow: number | null;
  /** The level the context must exceed: `window − reserveTokens`, or `fraction × window` with `--if-over FRACTION`. */
  level: number | null;
  /** Whether the session is over it (or ends in an overflow error); null when the window is unknown and there is no overflow. */
  over: boolean | null;
  reason: "overflow" | "threshold" | null;
}

/**
 * Is this session over Pi's trigger (or over `fraction` of the window)?
 * @param fraction `--if-over FRACTION`: compare with `fraction × window` instead of Pi's level
 *   (auto-compaction need not be on); an overflow error counts either way
 */
export function checkTrigger(
  branch: SessionEntry[],
  projected: ProjectedEntry[],
  contextWindow: number | null,
  settings: CompactionSettings,
  fraction?: number,
): TriggerCheck {
  const contextTokens = estimateProjectedContextTokens(projected, branch).tokens;
  const level = contextWindow === null ? null : fraction !== undefined ? fraction * contextWindow : contextWindow - settings.reserveTokens;
  const enabled = fraction !== undefined || settings.enabled;
  if (enabled && endsInOverflow(branch)) return { contextTokens, contextWindow, level, over: true, reason: "overflow" };
  if (level === null) return { contextTokens, contextWindow, level, over: null, reason: null };
  const over = enabled && contextTokens > level;
  return { contextTokens, contextWindow, level, over, reason: over ? "threshold" : null };
}

/** Pi's estimate of the context right before one recorded request. */
export interface RequestEstimate {
  /** Index in the branch of the assistant message the request produced. */
  index: number;
  entryId: string;
  /** Pi's `estimateProjectedContextTokens` on the branch up to (without) that message. */
  tokens: number;
}

/**
 * Pi's estimate of the context before each assistant request of a recorded branch (root → leaf),
 * in branch order. Linear while no compaction or context edit came before: the estimate is then
 * the last trusted usage plus the messages after it, or (before any usage) the replayed system
 * prompt plus every other message. After a compaction or context edit, until usage is reported
 * again, the prefix is projected in full.
 */
export function contextBeforeRequests(branch: SessionEntry[]): RequestEstimate[] {
  const out: RequestEstimate[] = [];
  let usageAt = -1;
  let usage = 0;
  let trailing = 0;
  let invalidAt = -1;
  // Before any usage and any compaction or edit: every message so far, the system ones replayed.
  let nonSystem = 0;
  const system: AgentMessage[] = [];
  let systemTokens = 0;
  for (let i = 0; i < branch.length; i++) {
    const entry = branch[i];
    const m = entry.type === "message" ? (entry.message as AssistantMessage | undefined) : undefined;
    if (m?.role === "assistant") {
      let tokens: number;
      if (usageAt >= 0 && usageAt > invalidAt) tokens = usage + trailing;
      else if (usageAt < 0 && invalidAt < 0) tokens = systemTokens + nonSystem;
      else tokens = estimateProjectedContextTokens(projectEntries(branch.slice(0, i)), branch.slice(0, i)).tokens;
      out.push({ index: i, entryId: entry.id, tokens });
    }
    if (entry.type === "context_edit" || entry.type === "compaction") invalidAt = i;
    const messages = entryToMessages(entry);
    if (invalidAt < 0) {
      for (const message of messages) {
        if (message.role !== "system") nonSystem += estimateMessageTokens(message);
        else {
          system.push(message);
          const replay = getCurrentSystemMessage(system);
          systemTokens = replay ? estimateMessageTokens(replay as AgentMessage) : 0;
        }
      }
    }
    if (m?.role === "assistant" && hasValidUsage(m)) {
      usageAt = i;
      usage = usageTokens(m.usage);
      trailing = 0;
    } else if (usageAt >= 0) {
      for (const message of messages) trailing += estimateMessageTokens(message);
    }
  }
  return out;
}

/**
 * Pi's per-message estimate of the whole context through each assistant request of a recorded
 * branch (root → leaf), in branch order: the sum of {@link estimateMessageTokens} over Pi's
 * projection of the branch up to and including that assistant message, the system messages
 * replaced by their replay, no usage trusted — the span a provider's `totalTokens` counts (the
 * request's input and its output). Linear; the prefix is projected again only at the first
 * request after a compaction or context edit.
 */
export function estimatesThroughRequests(branch: SessionEntry[]): RequestEstimate[] {
  const out: RequestEstimate[] = [];
  let nonSystem = 0;
  let system: AgentMessage[] = [];
  let systemTokens = 0;
  let stale = false;
  const add = (message: AgentMessage) => {
    if (message.role !== "system") {
      nonSystem += estimateMessageTokens(message);
      return;
    }
    system.push(message);
    const replay = getCurrentSystemMessage(system);
    systemTokens = replay ? estimateMessageTokens(replay as AgentMessage) : 0;
  };
  for (let i = 0; i < branch.length; i++) {
    const entry = branch[i];
    if (entry.type === "context_edit" || entry.type === "compaction") stale = true;
    else if (!stale) for (const message of entryToMessages(entry)) add(message);
    if (!assistantOf(entry)) continue;
    if (stale) {
      nonSystem = 0;
      system = [];
      systemTokens = 0;
      for (const projected of projectEntries(branch.slice(0, i + 1))) for (const message of projected.messages) add(message);
      stale = false;
    }
    out.push({ index: i, entryId: entry.id, tokens: systemTokens + nonSystem });
  }
  return out;
}

/** A place where Pi would have compacted on its own while the session was recorded. */
export interface PiCompactionPoint extends RequestEstimate {
  /** `threshold`: the context over the level; `overflow`: after this failed request. */
  reason: "threshold" | "overflow";
  /**
   * Which of Pi's checks fires: `before-request` (`_compactBeforeNextAssistantResponse`, Pi's
   * estimate before this request), or `after-reply` (`_checkCompaction` case 3 on the branch's final
   * reply: its reported usage, checked when the run ends and again before the next prompt, so a
   * resumed session compacts first). Overflow points are `before-request`'s request failing.
   */
  check: "before-request" | "after-reply";
  contextWindow: number;
  /** `contextWindow − reserveTokens`. */
  level: number;
}

/**
 * Replay Pi's auto-compaction checks over a recorded branch: before each assistant request, Pi's
 * estimate of the context against `window − reserveTokens` of that message's model, and after each
 * overflow error. Only the first point from the start and after each recorded compaction is
 * reported: once Pi compacts, the recorded sizes that follow no longer describe its context.
 * Nothing is reported when auto-compaction is off.
 *
 * @param windowOf context window of a message's `provider`/`model` (null when unknown)
 * @param estimates {@link contextBeforeRequests} of the branch, when already computed
 */
export function piCompactionPoints(
  branch: SessionEntry[],
  settings: CompactionSettings,
  windowOf: (provider: string | undefined, model: string | undefined) => number | null,
  estimates: RequestEstimate[] = contextBeforeRequests(branch),
): PiCompactionPoint[] {
  const points: PiCompactionPoint[] = [];
  if (!settings.enabled) return points;
  let next = 0;
  let fired = false;
  for (let i = 0; i < branch.length && next < estimates.length; i++) {
    if (branch[i].type === "compaction") fired = false;
    if (estimates[next].index !== i) continue;
    const estimate = estimates[next++];
    const m = assistantOf(branch[i]);
    const window = m ? windowOf(m.provider, m.model) : null;
    if (fired || window === null || window <= 0) continue;
    const level = window - settings.reserveTokens;
    const at = { ...estimate, check: "before-request" as const, contextWindow: window, level };
    if (estimate.tokens > level) points.push({ ...at, reason: "threshold" });
    else if (m?.stopReason === "error" && isContextOverflow(m)) points.push({ ...at, reason: "overflow" });
    else continue;
    fired = true;
  }
  const after = fired ? null : afterFinalReply(branch, settings, windowOf);
  if (after) points.push(after);
  return points;
}

/**
 * Pi's check on the branch's final reply (`_checkCompaction` case 3, at the end of a run and again
 * before the next prompt): its reported usage (`calculateContextTokens`) against `window −
 * reserveTokens`, or Pi's estimate of the projection when a context edit is in it. Null when a
 * compaction follows the reply, its usage is not trusted, or it is under the level.
 */
function afterFinalReply(
  branch: SessionEntry[],
  settings: CompactionSettings,
  windowOf: (provider: string | undefined, model: string | undefined) => number | null,
): PiCompactionPoint | null {
  const last = lastAssistant(branch);
  if (!last || !hasValidUsage(last.message)) return null;
  const index = branch.lastIndexOf(last.entry);
  if (branch.slice(index + 1).some((e) => e.type === "compaction")) return null;
  const window = windowOf(last.message.provider, last.message.model);
  if (window === null || window <= 0) return null;
  const projected = branch.some((e) => e.type === "context_edit") ? projectEntries(branch) : null;
  const edited = projected?.some((p) => p.sourceEntry.type === "context_edit");
  const tokens = projected && edited ? estimateProjectedContextTokens(projected, branch).tokens : usageTokens(last.message.usage);
  const level = window - settings.reserveTokens;
  if (tokens <= level) return null;
  return { index, entryId: last.entry.id, tokens, reason: "threshold", check: "after-reply", contextWindow: window, level };
}
