/**
 * Shapes of a Pi session file (Pi 1.6, session format v3; SPEC.md section 4).
 *
 * Message shapes come from `@earendil-works/pi-ai`; the roles Pi adds on top of them
 * (`custom`, `bashExecution`, `branchSummary`, `compactionSummary`) are declared here because
 * `@earendil-works/pi-coding-agent` cannot be imported on Node 20.
 */
import type {
  AssistantMessage,
  ImageContent,
  Message,
  TextContent,
  ToolCall,
  ToolResultMessage,
  UserMessage,
} from "@earendil-works/pi-ai";

export type { AssistantMessage, ImageContent, Message, TextContent, ToolCall, ToolResultMessage, UserMessage };

/** Line 1 of a session file. `version` is absent in v1 files. */
export interface SessionHeader {
  type: "session";
  id: string;
  version?: number;
  timestamp: string;
  cwd?: string;
  parentSession?: string;
  [key: string]: unknown;
}

/**
 * Any entry after the header. `id` is 8 hex characters, `parentId` null for a root,
 * `timestamp` an ISO string. Unknown entry types are kept as they are.
 */
export interface SessionEntry {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

export interface MessageEntry extends SessionEntry {
  type: "message";
  message: AgentMessage;
}

export interface CustomEntry extends SessionEntry {
  type: "custom";
  customType: string;
  data?: unknown;
}

export interface CustomMessageEntry extends SessionEntry {
  type: "custom_message";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display?: boolean;
  details?: unknown;
}

export interface CompactionEntry extends SessionEntry {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  systemMessage?: Message;
}

export interface ContextEditEntry extends SessionEntry {
  type: "context_edit";
  targetId: string;
  replacement: { content: string | unknown[] } | null;
}

/** Pi's `custom` role: a `custom_message` entry (or a v3 message with role custom) in context. */
export interface CustomMessage {
  role: "custom";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display?: boolean;
  details?: unknown;
  timestamp: number;
}

/** A `!command` run by the user in Pi's editor. */
export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output?: string;
  exitCode?: number | null;
  cancelled?: boolean;
  truncated?: boolean;
  fullOutputPath?: string;
  excludeFromContext?: boolean;
  timestamp: number;
}

export interface BranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  fromId: string;
  timestamp: number;
}

export interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  tokensBefore: number;
  timestamp: number;
}

/** A message as Pi holds it before `convertToLlm`: pi-ai's roles plus Pi's own. */
export type AgentMessage =
  | Message
  | CustomMessage
  | BashExecutionMessage
  | BranchSummaryMessage
  | CompactionSummaryMessage;

/** Where an entry sits in its file: 1-based line number and 0-based byte offset of the line start. */
export interface EntryLocation {
  line: number;
  offset: number;
}

export function isMessageEntry(entry: SessionEntry): entry is MessageEntry {
  return entry.type === "message" && typeof entry.message === "object" && entry.message !== null;
}
