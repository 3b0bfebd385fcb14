/**
 * Pi's projection of the active branch into the model-visible message list (Pi 1.6
 * `buildContextEntries`, `buildSessionProjection`, `convertToLlm`; docs/design.md §4).
 */
import type { AgentMessage, CompactionEntry, ContextEditEntry, CustomMessageEntry, Message, SessionEntry, TextContent } from "../session/types.js";

export const COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
export const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";
export const BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
export const BRANCH_SUMMARY_SUFFIX = "</summary>";

/** One projected message and the entry it came from. */
export interface ContextItem {
  message: AgentMessage;
  entry: SessionEntry;
}

/**
 * The compaction-aware entry list of a branch: without compaction the branch itself; otherwise
 * the latest compaction entry, then the branch entries from its `firstKeptEntryId` up to it
 * (system messages excluded), then everything after it.
 */
export function buildContextEntries(branch: SessionEntry[]): SessionEntry[] {
  let compactionIdx = -1;
  for (let i = 0; i < branch.length; i++) if (branch[i].type === "compaction") compactionIdx = i;
  if (compactionIdx < 0) return branch;
  const compaction = branch[compactionIdx] as CompactionEntry;
  const out: SessionEntry[] = [compaction];
  let foundFirstKept = false;
  for (let i = 0; i < compactionIdx; i++) {
    const entry = branch[i];
    if (entry.id === compaction.firstKeptEntryId) foundFirstKept = true;
    if (foundFirstKept && !(entry.type === "message" && (entry.message as AgentMessage)?.role === "system")) {
      out.push(entry);
    }
  }
  for (let i = compactionIdx + 1; i < branch.length; i++) out.push(branch[i]);
  return out;
}

/**
 * Timestamps (epoch ms) of the user and assistant messages on a branch that Pi's latest compaction
 * leaves out of the context: those of the entries before its first kept entry (see
 * {@link buildContextEntries}). Empty without a compaction.
 */
export function compactedMessageTimestamps(branch: SessionEntry[]): Set<number> {
  const out = new Set<number>();
  let compactionIdx = -1;
  for (let i = 0; i < branch.length; i++) if (branch[i].type === "compaction") compactionIdx = i;
  if (compactionIdx < 0) return out;
  const firstKept = (branch[compactionIdx] as CompactionEntry).firstKeptEntryId;
  for (let i = 0; i < compactionIdx; i++) {
    const entry = branch[i];
    if (entry.id === firstKept) break;
    const message = entry.type === "message" ? (entry.message as AgentMessage | undefined) : undefined;
    if ((message?.role === "user" || message?.role === "assistant") && typeof message.timestamp === "number") out.add(message.timestamp);
  }
  return out;
}

function isoToMs(timestamp: unknown): number {
  return new Date(timestamp as string).getTime();
}

/** The messages one entry contributes to context, before any context edit (Pi's `sessionEntryToContextMessages`). */
export function entryToMessages(entry: SessionEntry): AgentMessage[] {
  switch (entry.type) {
    case "message": {
      const message = entry.message as AgentMessage & { content?: unknown };
      if (!message || typeof message !== "object") return [];
      if (message.role === "system" && message.content == null) return [{ ...message, content: "" } as AgentMessage];
      if ((message.role === "user" || message.role === "assistant" || message.role === "toolResult") && message.content == null) {
        return [{ ...message, content: [] } as AgentMessage];
      }
      return [message];
    }
    case "custom_message": {
      const e = entry as CustomMessageEntry;
      return [
        {
          role: "custom",
          customType: e.customType,
          content: e.content ?? [],
          display: e.display,
          details: e.details,
          timestamp: isoToMs(e.timestamp),
        },
      ];
    }
    case "branch_summary":
      if (!entry.summary) return [];
      return [
        {
          role: "branchSummary",
          summary: entry.summary as string,
          fromId: entry.fromId as string,
          timestamp: isoToMs(entry.timestamp),
        },
      ];
    case "compaction": {
      const e = entry as CompactionEntry;
      const summary: AgentMessage = {
        role: "compactionSummary",
        summary: e.summary,
        tokensBefore: e.tokensBefore,
        timestamp: isoToMs(e.timestamp),
      };
      return e.systemMessage ? [e.systemMessage, summary] : [summary];
    }
    default:
      return [];
  }
}

/** The latest `context_edit` per target id among `entries` (later entries win). */
export function latestEdits(entries: SessionEntry[]): Map<string, ContextEditEntry> {
  const edits = new Map<string, ContextEditEntry>();
  for (const entry of entries) {
    if (entry.type === "context_edit") edits.set((entry as ContextEditEntry).targetId, entry as ContextEditEntry);
  }
  return edits;
}

/** Apply a context edit to an entry's messages: `null` omits them, otherwise the content is replaced. */
export function applyEdit(messages: AgentMessage[], edit: ContextEditEntry | undefined): AgentMessage[] {
  if (!edit) return messages;
  const replacement = edit.replacement;
  if (replacement === null) return [];
  return messages.map((message) => {
    if (message.role !== "user" && message.role !== "assistant" && message.role !== "toolResult" && message.role !== "custom") {
      return message;
    }
    const content =
      (message.role === "assistant" || message.role === "toolResult") && typeof replacement.content === "string"
        ? [{ type: "text", text: replacement.content }]
        : replacement.content;
    return { ...message, content } as AgentMessage;
  });
}

/**
 * Whether Pi's `appendContextEdit` accepts `entry` as a target (pi-coding-agent 1.6
 * `dist/core/session-manager.js`): a `custom_message` entry, or a `message` entry whose role is
 * user, assistant or toolResult. Not a bash execution, a `custom`/`system` message (a migrated v2
 * `hookMessage`), a branch summary, a compaction or any other entry. (Pi applies whatever edit a
 * file holds, so condense itself must never write one that the API would refuse.)
 */
export function isEditableTarget(entry: SessionEntry): boolean {
  if (entry.type === "custom_message") return true;
  if (entry.type !== "message") return false;
  const role = (entry.message as { role?: unknown } | undefined)?.role;
  return role === "user" || role === "assistant" || role === "toolResult";
}

/** One entry of the compaction-aware entry list with the messages it contributes (possibly none). */
export interface ProjectedEntry {
  sourceEntry: SessionEntry;
  messages: AgentMessage[];
}

/** A branch projected once: what the projection, the capture, the render and compaction all read. */
export interface BranchContext {
  /** The compaction-aware entry list ({@link buildContextEntries}). */
  entries: SessionEntry[];
  /** The latest `context_edit` per target among `entries` ({@link latestEdits}). */
  edits: Map<string, ContextEditEntry>;
  /**
   * Pi's `buildSessionProjection(...).entries`: every entry of `entries`, in order, with its
   * messages after its latest context edit — metadata entries keep an empty list, and an older
   * compaction retained inside the kept range contributes nothing (only the newest, at index 0,
   * gives its summary). Compaction's cut point walks this list.
   */
  projected: ProjectedEntry[];
  /** The projected messages, each with its source entry ({@link projectBranch}). */
  items: ContextItem[];
}

/**
 * Project a branch (root → leaf) as Pi's `buildSessionProjection` does — compaction-aware entry
 * selection, the latest `context_edit` per target applied, only the newest compaction contributing
 * its summary — keeping the entry list and the edits the projection was made from.
 */
export function projectContext(branch: SessionEntry[]): BranchContext {
  const entries = buildContextEntries(branch);
  const edits = latestEdits(entries);
  const projected = entries.map((sourceEntry, index) => ({
    sourceEntry,
    messages: sourceEntry.type === "compaction" && index > 0 ? [] : applyEdit(entryToMessages(sourceEntry), edits.get(sourceEntry.id)),
  }));
  const items: ContextItem[] = [];
  for (const { sourceEntry: entry, messages } of projected) for (const message of messages) items.push({ message, entry });
  return { entries, edits, projected, items };
}

/**
 * The projection of `branch` from the projection of its first `baseLength` entries (`base`, made by
 * {@link projectContext} or this function), without projecting those again: exactly
 * `projectContext(branch)`, sharing `base`'s items and messages where nothing changed. An appended
 * `context_edit` re-projects its target (the latest edit wins, as in {@link latestEdits}); an
 * appended compaction changes the entry list, so the whole branch is projected then.
 * @param branch root → leaf; its first `baseLength` entries are the branch `base` projects
 */
export function extendContext(base: BranchContext, branch: SessionEntry[], baseLength: number): BranchContext {
  const appended = branch.slice(baseLength);
  if (appended.length === 0) return base;
  if (appended.some((e) => e.type === "compaction")) return projectContext(branch);
  const edits = new Map(base.edits);
  const retargeted = new Set<string>();
  for (const entry of appended) {
    if (entry.type !== "context_edit") continue;
    edits.set((entry as ContextEditEntry).targetId, entry as ContextEditEntry);
    retargeted.add((entry as ContextEditEntry).targetId);
  }
  const reproject = (sourceEntry: SessionEntry, index: number): ProjectedEntry => ({
    sourceEntry,
    messages: sourceEntry.type === "compaction" && index > 0 ? [] : applyEdit(entryToMessages(sourceEntry), edits.get(sourceEntry.id)),
  });
  const projected: ProjectedEntry[] = [];
  const items: ContextItem[] = [];
  let kept = 0; // base items taken so far
  base.projected.forEach((p, index) => {
    const n = p.messages.length;
    if (!retargeted.has(p.sourceEntry.id)) {
      projected.push(p);
      for (let k = 0; k < n; k++) items.push(base.items[kept + k]);
    } else {
      const q = reproject(p.sourceEntry, index);
      projected.push(q);
      for (const message of q.messages) items.push({ message, entry: q.sourceEntry });
    }
    kept += n;
  });
  for (const entry of appended) {
    const q = reproject(entry, projected.length);
    projected.push(q);
    for (const message of q.messages) items.push({ message, entry });
  }
  return { entries: [...base.entries, ...appended], edits, projected, items };
}

/** The context items of a branch ({@link projectContext}). */
export function projectBranch(branch: SessionEntry[]): ContextItem[] {
  return projectContext(branch).items;
}

/** The projected entries of a branch ({@link BranchContext.projected}). */
export function projectEntries(branch: SessionEntry[]): ProjectedEntry[] {
  return projectContext(branch).projected;
}

/** Pi's `bashExecutionToText`: the user-message text for a `!command` run. */
export function bashExecutionToText(msg: {
  command: string;
  output?: string;
  cancelled?: boolean;
  exitCode?: number | null;
  truncated?: boolean;
  fullOutputPath?: string;
}): string {
  let text = `Ran \`${msg.command}\`\n`;
  text += msg.output ? `\`\`\`\n${msg.output}\n\`\`\`` : "(no output)";
  if (msg.cancelled) text += "\n\n(command cancelled)";
  else if (msg.exitCode !== null && msg.exitCode !== undefined && msg.exitCode !== 0) {
    text += `\n\nCommand exited with code ${msg.exitCode}`;
  }
  if (msg.truncated && msg.fullOutputPath) text += `\n\n[Output truncated. Full output: ${msg.fullOutputPath}]`;
  return text;
}

/**
 * Convert one Pi message to what pi-ai receives (Pi's `convertToLlm`): Pi's own roles become
 * user messages, `bashExecution` with `excludeFromContext` and unknown roles are dropped.
 */
export function toLlmMessage(m: AgentMessage): Message | undefined {
  switch (m.role) {
    case "bashExecution":
      if (m.excludeFromContext) return undefined;
      return { role: "user", content: [{ type: "text", text: bashExecutionToText(m) }], timestamp: m.timestamp };
    case "custom": {
      const content = typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : m.content;
      return { role: "user", content, timestamp: m.timestamp };
    }
    case "branchSummary":
      return {
        role: "user",
        content: [{ type: "text", text: BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX }],
        timestamp: m.timestamp,
      };
    case "compactionSummary":
      return {
        role: "user",
        content: [{ type: "text", text: COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX }],
        timestamp: m.timestamp,
      };
    case "system":
    case "user":
    case "assistant":
    case "toolResult":
      return m;
    default:
      return undefined;
  }
}

/** {@link toLlmMessage} over a list. */
export function convertToLlm(messages: AgentMessage[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    const converted = toLlmMessage(m);
    if (converted) out.push(converted);
  }
  return out;
}

/** Plain text of a message's content (text blocks joined by "\n"; images and other blocks skipped). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b): b is TextContent => !!b && typeof b === "object" && (b as TextContent).type === "text")
    .map((b) => b.text)
    .join("\n");
}
