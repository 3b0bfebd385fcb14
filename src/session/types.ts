/**
 * Shapes of a Pi session file (Pi 1.6, session format v3; docs/design.md §4).
 *
 * Message shapes come from `@earendil-works/pi-ai`; the roles Pi adds on top of them
 * (`custom`, `bashExecution`, `branchSummary`, `compactionSummary`) are declared here because
 * `@earendil-works/pi-coding-agent` cannot be imported on Node 20.
 */
import type { AssistantMessage, ImageContent, Message, TextContent, ToolCall, ToolResultMessage, UserMessage } from "@earendil-works/pi-ai";

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

/** Fields every entry after the header has: `id` is 8 hex characters, `parentId` null for a root, `timestamp` an ISO string. */
export interface SessionEntryBase {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
}

export interface MessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}

export interface ThinkingLevelChangeEntry extends SessionEntryBase {
  type: "thinking_level_change";
  thinkingLevel: string;
}

/** A model switch. Pi 1.6 writes `provider` and `modelId`; older files `model: "provider/id"` with a `role`. */
export interface ModelChangeEntry extends SessionEntryBase {
  type: "model_change";
  provider?: string;
  modelId?: string;
  model?: string;
  role?: string;
}

export interface UsageEntry extends SessionEntryBase {
  type: "usage";
  kind: string;
  provider: string;
  model: string;
  usage: unknown;
  note?: string;
}

/**
 * A compaction (docs/design.md §10): the summary replaces everything before `firstKeptEntryId`.
 * `systemMessage` replays the branch's system messages, stamped with the entry's time.
 */
export interface CompactionEntry<T = unknown> extends SessionEntryBase {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  details?: T;
  usage?: unknown;
  fromHook?: boolean;
  systemMessage?: Message;
  /** `/compact <instructions>` (stored by condense's `--instructions`; Pi 1.6 ignores it). */
  customInstructions?: string;
}

/** What Pi's own compaction keeps in `details`: the files the summarized span touched, sorted. */
export interface CompactionDetails {
  /** Files only read. */
  readFiles: string[];
  /** Files written or edited. */
  modifiedFiles: string[];
}

export interface BranchSummaryEntry<T = unknown> extends SessionEntryBase {
  type: "branch_summary";
  fromId: string;
  summary: string;
  details?: T;
  usage?: unknown;
  fromHook?: boolean;
}

/** Extension state, never in context (`data` as the extension wrote it: read it through a validating reader). */
export interface CustomEntry<T = unknown> extends SessionEntryBase {
  type: "custom";
  customType: string;
  data?: T;
}

export interface LabelEntry extends SessionEntryBase {
  type: "label";
  targetId: string;
  label: string | undefined;
}

export interface SessionInfoEntry extends SessionEntryBase {
  type: "session_info";
  name?: string;
}

/** A message an extension puts into context (as a user message); `details` never reach the model. */
export interface CustomMessageEntry<T = unknown> extends SessionEntryBase {
  type: "custom_message";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display?: boolean;
  details?: T;
}

/** An append-only change to one earlier entry's contribution to context: `null` omits it. */
export interface ContextEditEntry extends SessionEntryBase {
  type: "context_edit";
  targetId: string;
  replacement: { content: string | unknown[] } | null;
}

/**
 * Stands for every entry `type` condense does not know. TypeScript cannot spell "any string but
 * the known ones", so the type is a tag: at run time `type` holds whatever the file says. Such
 * entries are read, kept in the tree and never rewritten (appends leave existing bytes alone).
 */
export type UnknownEntryType = "(an entry type condense does not know)";

export interface UnknownEntry extends SessionEntryBase {
  type: UnknownEntryType;
  [key: string]: unknown;
}

/** The entries Pi 1.6 writes. */
export type KnownEntry =
  | MessageEntry
  | ThinkingLevelChangeEntry
  | ModelChangeEntry
  | UsageEntry
  | CompactionEntry
  | BranchSummaryEntry
  | CustomEntry
  | CustomMessageEntry
  | ContextEditEntry
  | LabelEntry
  | SessionInfoEntry;

/** Any entry after the header (docs/design.md §4): one of Pi's, or one condense does not know. */
export type SessionEntry = KnownEntry | UnknownEntry;

/** Distributes `Omit` over a union. */
type PayloadOf<E> = E extends SessionEntryBase ? Omit<E, "id" | "parentId" | "timestamp"> : never;

/** An entry to append, before it gets its id, parent and timestamp (built by `entries/build.ts`). */
export type NewEntry = PayloadOf<KnownEntry>;

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
export type AgentMessage = Message | CustomMessage | BashExecutionMessage | BranchSummaryMessage | CompactionSummaryMessage;

/** Where an entry sits in its file: 1-based line number and 0-based byte offset of the line start. */
export interface EntryLocation {
  line: number;
  offset: number;
}

/** A message entry that holds a message object (a `message` entry without one is malformed). */
export function isMessageEntry(entry: SessionEntry): entry is MessageEntry {
  return entry.type === "message" && typeof entry.message === "object" && entry.message !== null;
}
