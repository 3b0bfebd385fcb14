/**
 * The files a compaction remembers (Pi 1.6 pi-coding-agent `dist/core/compaction/utils.js`:
 * `extractFileOpsFromMessage`, `computeFileLists`, `formatFileOperations`; docs/design.md §10
 * "Cumulative file tracking"). A `read` call's `path` is read, `write` written, `edit` edited; calls
 * made from a codemode script are found in its result's `nestedCalls`. The lists accumulate across
 * compactions through the previous entry's `details`.
 */
import type { AgentMessage, CompactionDetails } from "../session/types.js";

/** Paths by operation, each set in first-seen order. */
export interface FileOps {
  read: Set<string>;
  written: Set<string>;
  edited: Set<string>;
}

export function createFileOps(): FileOps {
  return { read: new Set(), written: new Set(), edited: new Set() };
}

function addFileOp(toolName: unknown, args: unknown, ops: FileOps): void {
  const path = typeof (args as { path?: unknown } | null)?.path === "string" ? (args as { path: string }).path : undefined;
  if (!path) return;
  if (toolName === "read") ops.read.add(path);
  else if (toolName === "write") ops.written.add(path);
  else if (toolName === "edit") ops.edited.add(path);
}

/** Add the file operations of one message: an assistant's tool calls, or the nested calls on a tool result. */
export function extractFileOpsFromMessage(message: AgentMessage, ops: FileOps): void {
  if (message.role === "toolResult") {
    const nested = (message as { nestedCalls?: { calls?: { name?: unknown; arguments?: unknown }[] } }).nestedCalls;
    for (const call of nested?.calls ?? []) addFileOp(call.name, call.arguments, ops);
    return;
  }
  if (message.role !== "assistant" || !Array.isArray(message.content)) return;
  for (const block of message.content as unknown[]) {
    if (typeof block !== "object" || block === null) continue;
    const b = block as { type?: unknown; name?: unknown; arguments?: unknown };
    if (b.type !== "toolCall" || !("arguments" in b) || !("name" in b)) continue;
    addFileOp(b.name, b.arguments, ops);
  }
}

/** Add the lists of a previous compaction's `details` (only when Pi wrote it: not `fromHook`). */
export function addPreviousDetails(details: unknown, fromHook: unknown, ops: FileOps): void {
  if (fromHook || !details || typeof details !== "object") return;
  const d = details as { readFiles?: unknown; modifiedFiles?: unknown };
  if (Array.isArray(d.readFiles)) for (const f of d.readFiles) ops.read.add(f);
  if (Array.isArray(d.modifiedFiles)) for (const f of d.modifiedFiles) ops.edited.add(f);
}

/** The final lists: modified = written ∪ edited; read = read and never modified; both sorted (Pi's `computeFileLists`). */
export function computeFileLists(ops: FileOps): CompactionDetails {
  const modified = new Set([...ops.edited, ...ops.written]);
  const readFiles = [...ops.read].filter((f) => !modified.has(f)).sort();
  return { readFiles, modifiedFiles: [...modified].sort() };
}

/** The tags Pi appends to every summary: `\n\n<read-files>…</read-files>\n\n<modified-files>…</modified-files>`, or "". */
export function formatFileOperations(readFiles: string[], modifiedFiles: string[]): string {
  const sections: string[] = [];
  if (readFiles.length > 0) sections.push(`<read-files>\n${readFiles.join("\n")}\n</read-files>`);
  if (modifiedFiles.length > 0) sections.push(`<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`);
  return sections.length === 0 ? "" : `\n\n${sections.join("\n\n")}`;
}
