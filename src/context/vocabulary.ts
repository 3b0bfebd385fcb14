/**
 * The message vocabulary the pruner shares with the extension (docs/design.md "Occurrence
 * Identity", "Stub-replace instead of delete", "Synthetic message format"), each text produced and
 * parsed side by side:
 * - occurrence keys: a tool call is named `toolCallId@resultTimestamp` (provider ids recur);
 * - the stubs that replace pruned tool results, and how to read their ref back;
 * - for stock Pi (no pi-condense extension, so no `context_tree_query` tool): the
 *   `condense query <ref>` command and the sentence that names it;
 * - the `<compressed-chain>` user message that stands for a compressed chain, and how to find it;
 * - which tool call a tool result answers: one walker, the rule differences as parameters.
 */
import type { ToolCallRecord } from "../entries/types.js";
import type { AgentMessage, AssistantMessage, ToolCall, ToolResultMessage } from "../session/types.js";

// ---- Occurrence keys

/** `id@resultTimestamp`, or the bare id when there is no result timestamp. */
export function occurrenceKey(toolCallId: string, resultTimestamp: number | undefined | null): string {
  return typeof resultTimestamp === "number" ? `${toolCallId}@${resultTimestamp}` : toolCallId;
}

/** The occurrence key of a tool result: its call id and its own `timestamp` (when a number). */
export function resultKeyOf(result: Pick<ToolResultMessage, "toolCallId" | "timestamp">): string {
  return occurrenceKey(result.toolCallId, typeof result.timestamp === "number" ? result.timestamp : undefined);
}

/** The occurrence key of a record or ref: its call id and result timestamp (bare id without one). */
export function recordKeyOf(record: { toolCallId: string; resultTimestamp?: number }): string {
  return occurrenceKey(record.toolCallId, record.resultTimestamp);
}

/** Split an occurrence key at its last `@` when the suffix is all digits. */
export function parseOccurrenceKey(key: string): { toolCallId: string; resultTimestamp?: number } {
  const at = key.lastIndexOf("@");
  if (at > 0 && /^\d+$/.test(key.slice(at + 1))) {
    return { toolCallId: key.slice(0, at), resultTimestamp: Number(key.slice(at + 1)) };
  }
  return { toolCallId: key };
}

// ---- Stubs

const STUB_PREFIXES = ["[Summarized in pruner summary", "[Oversized output spilled to file"];

/** ``[Summarized in pruner summary, ref `tN`. Use context_tree_query to retrieve full output.]`` */
export function summarizedStub(ref: string): string {
  return `[Summarized in pruner summary, ref \`${ref}\`. Use context_tree_query to retrieve full output.]`;
}

/**
 * The stub of a spilled output, exactly as the extension writes it (pi-condense 2.9.1
 * `src/pruner.ts`, phase 1): size in UTF-8 bytes, tool, head preview, sidecar path and ref, one
 * per line. The ref is the short ref when the index has one, else the raw tool-call id.
 */
export function spilledStub(record: ToolCallRecord, ref: string): string {
  return [
    `[Oversized output spilled to file — ${record.spillBytes ?? "?"} bytes.]`,
    `Tool: ${record.toolName}`,
    "Preview (head):",
    record.resultPreview ?? "",
    `Full output — read this file (offset/limit supported): ${record.spillPath}`,
    `Or use context_tree_query with ref \`${ref}\`.`,
  ].join("\n");
}

/**
 * Whose stub texts a render writes: `extension` — the texts the pi-condense extension puts in the
 * context (its code, byte for byte); `pi` — the texts `run --target pi` writes into Pi's own
 * `context_edit` entries for stock Pi, which has no `context_tree_query` tool: they name the
 * `condense query <ref>` command ({@link recoveryHint}) and still name `context_tree_query` for a
 * model that has the extension. Native texts are longer than the extension's, so the extension,
 * switched on over a native file, only ever replaces a stub by a shorter one.
 */
export type StubWording = { target: "extension" } | { target: "pi"; recovery: RecoveryOptions };

/** The extension's wording (the default of every render). */
export const EXTENSION_WORDING: StubWording = { target: "extension" };

/**
 * The stub of a summarized (or deduplicated) result in a wording: {@link summarizedStub}, or for
 * stock Pi ``[Summarized in pruner summary, ref `t3`. Full output: `condense query t3` in bash (or
 * context_tree_query).]`` — `--full` when the record's output is past the default head.
 */
export function summarizedStubIn(wording: StubWording, record: ToolCallRecord, ref: string): string {
  if (wording.target === "extension") return summarizedStub(ref);
  return `[Summarized in pruner summary, ref \`${ref}\`. ${recoveryHint(ref, { ...wording.recovery, full: recoveryNeedsFull(record) })}]`;
}

/**
 * The stub of a spilled result in a wording: {@link spilledStub}, or for stock Pi the same lines
 * but the last, which becomes ``Or run `condense query t5 --full` in bash, or use
 * context_tree_query with ref `t5`.`` ({@link stubRef} reads both).
 */
export function spilledStubIn(wording: StubWording, record: ToolCallRecord, ref: string): string {
  const text = spilledStub(record, ref);
  if (wording.target === "extension") return text;
  const command = recoveryCommand(ref, { ...wording.recovery, full: true });
  return `${text.slice(0, text.lastIndexOf("\n"))}\nOr run \`${command}\` in bash, or use context_tree_query with ref \`${ref}\`.`;
}

/** True when a tool result's text is a pruner stub. */
export function isStubText(text: string): boolean {
  return STUB_PREFIXES.some((p) => text.startsWith(p));
}

/**
 * The ref a stub names (`tN`, or a raw id for records without a short ref): read where each stub
 * above puts it, so a spilled stub's preview cannot be taken for its ref.
 */
export function stubRef(text: string): string | undefined {
  return /^\[Summarized in pruner summary, ref `([^`]+)`/.exec(text)?.[1] ?? /\nOr (?:use|run .*) context_tree_query with ref `([^`]+)`\.$/.exec(text)?.[1];
}

// ---- The recovery command (stock Pi)

/*
 * A model in stock Pi gets a pruned output back by running `condense query <ref>` through its bash
 * tool. Inside Pi 1.6 that command finds the current session by itself (`$PI_SESSION_FILE`, else the
 * newest session of the cwd, as `pi --continue`; session/locate.ts), so `--session <path>` is added
 * only when the writer knows the session lives where neither would find it (session/locate.ts
 * `continueFolder` tells which folder `pi --continue` searches for a cwd). Stubs, summaries and chain
 * blocks written for stock Pi name the command through these functions.
 */

/** Characters a POSIX shell word may hold unquoted. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** `word` as one POSIX shell word: unchanged when safe, else single-quoted (`'` written as `'\''`). */
export function shellWord(word: string): string {
  return SAFE_WORD.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Options of the recovery command. */
export interface RecoveryOptions {
  /** Absolute path of the session file, when `condense` would not find it from the session's cwd. */
  session?: string;
  /** Add `--full`: an output is past the head `condense query` prints by default ({@link exceedsHead}). */
  full?: boolean;
}

/** The head `condense query` prints by default, Pi's own head truncation (query/truncate.ts): 2000 lines, 50 KB. */
export const HEAD_MAX_LINES = 2000;
export const HEAD_MAX_BYTES = 50 * 1024;

/**
 * True when `condense query` would cut `text` without `--full`: more than {@link HEAD_MAX_LINES}
 * lines (a trailing newline starts none) or more than {@link HEAD_MAX_BYTES} UTF-8 bytes.
 */
export function exceedsHead(text: string): boolean {
  // A UTF-16 code unit takes 1 to 3 UTF-8 bytes (a surrogate pair 4): count bytes only in between.
  if (text.length > HEAD_MAX_BYTES) return true;
  if (text.length * 3 > HEAD_MAX_BYTES && Buffer.byteLength(text, "utf8") > HEAD_MAX_BYTES) return true;
  let lines = text === "" ? 0 : 1;
  for (let i = text.indexOf("\n"); i !== -1 && lines <= HEAD_MAX_LINES; i = text.indexOf("\n", i + 1)) if (i < text.length - 1) lines++;
  return lines > HEAD_MAX_LINES;
}

/** True when recovering a record's whole output takes `--full`: a spilled output, or one past the head. */
export function recoveryNeedsFull(record: Pick<ToolCallRecord, "spillPath" | "resultText">): boolean {
  return !!record.spillPath || exceedsHead(record.resultText);
}

/**
 * The shell command that prints the stored original output(s) behind `refs`:
 * `condense query t3`, `condense query t3 t7 --session '/path/with space/s.jsonl'`.
 * @param refs short refs (`t3`), occurrence keys or raw tool-call ids; at least one
 * @throws Error when `refs` is empty
 */
export function recoveryCommand(refs: string | string[], options: RecoveryOptions = {}): string {
  const list = typeof refs === "string" ? [refs] : refs;
  if (list.length === 0) throw new Error("recoveryCommand: no ref given");
  const full = options.full ? " --full" : "";
  const session = options.session !== undefined ? ` --session ${shellWord(options.session)}` : "";
  return `condense query ${list.map(shellWord).join(" ")}${full}${session}`;
}

/**
 * One sentence naming the command, for a stub or a chain block written for stock Pi — short,
 * because it stands in the context for every pruned output:
 * ``Full output: `condense query t3` in bash (or context_tree_query).`` (plural for several refs;
 * `--full` when `options.full`).
 */
export function recoveryHint(refs: string | string[], options: RecoveryOptions = {}): string {
  const several = typeof refs !== "string" && refs.length > 1;
  return `Full output${several ? "s" : ""}: \`${recoveryCommand(refs, options)}\` in bash (or context_tree_query).`;
}

/**
 * The recovery hint of the texts condense writes for a session the extension reads (summaries,
 * chain blocks): both ways back to a pruned output — the extension's `context_tree_query` tool,
 * and `condense query <ref>` through bash, which works in any Pi. The extension's own stubs keep
 * the extension's wording.
 */
export const RECOVERY_HINT =
  "Pruned outputs are recoverable by ref: call `context_tree_query` with the ref, or run `condense query <ref>` in bash (--full for all of a long one).";

// ---- The compressed-chain block

/** The synthetic block's text: `<compressed-chain id tools>`, body, relocated protected outputs, closing tag. */
export function compressedChainText(block: { blockId: string; toolRefs?: string[] }, body: string, protectedOutputs: { tool: string; text: string }[]): string {
  const relocated = protectedOutputs.map((p) => `\n\n<protected-output tool="${p.tool.replace(/"/g, "&quot;")}">\n${p.text}\n</protected-output>`).join("");
  return `<compressed-chain id="${block.blockId}" tools="${(block.toolRefs ?? []).join(",")}">\n${body}${relocated}\n</compressed-chain>`;
}

/**
 * The body of a chain block in a wording: as it is for the extension; for stock Pi followed by
 * {@link recoveryHint} for the chain's refs (none when the chain has no refs).
 * @param full some output behind `refs` is past the default head (the command gets `--full`)
 */
export function chainBodyIn(wording: StubWording, body: string, refs: string[], full: boolean): string {
  if (wording.target === "extension" || refs.length === 0) return body;
  return `${body}\n\n${recoveryHint(refs, { ...wording.recovery, full })}`;
}

/** The block id of a text that starts with a compressed-chain block, or undefined. */
export function compressedChainId(text: string): string | undefined {
  return /^<compressed-chain id="([^"]*)"/.exec(text)?.[1];
}

/**
 * A user message's content without its `<compressed-chain>` blocks (by {@link compressedChainId}):
 * what the user wrote. The extension's block is a user message of its own (nothing is left);
 * stock Pi's context edits carry it as the first block of the chain's first user message.
 */
export function withoutCompressedChains(content: unknown): unknown {
  const isBlock = (text: unknown) => typeof text === "string" && compressedChainId(text.trimStart()) !== undefined;
  if (typeof content === "string") return isBlock(content) ? "" : content;
  return Array.isArray(content) ? content.filter((b) => !(b?.type === "text" && isBlock(b.text))) : content;
}

/** The text of a user message's first text block (or its string content). */
export function firstUserText(m: AgentMessage): string | undefined {
  if (m.role !== "user") return undefined;
  if (typeof m.content === "string") return m.content;
  if (!Array.isArray(m.content)) return undefined;
  const block = m.content.find((b) => b?.type === "text") as { text?: string } | undefined;
  return block?.text;
}

/** True for a user message that is a `<compressed-chain>` synthetic block. */
export function isCompressedChainMessage(m: AgentMessage): boolean {
  const first = firstUserText(m);
  return typeof first === "string" && first.trimStart().startsWith("<compressed-chain");
}

// ---- Which call a result answers

/** The tool calls of an assistant message, in order. */
export function toolCallsOf(m: AssistantMessage): ToolCall[] {
  return Array.isArray(m.content) ? m.content.filter((b): b is ToolCall => b?.type === "toolCall") : [];
}

/**
 * How a walk pairs tool results with tool calls. Pi, pi-ai and the extension each pair them in
 * their own way, and condense reproduces each where it reproduces that reader:
 * - `scope`: `turn` — a result answers a call of the most recent assistant message only (pi-ai,
 *   the orphan sweep); `any` — a call of any earlier assistant message of the walk.
 * - `reuse` (scope `any`): when two assistant messages call the same id, the `first` keeps it, or
 *   the `latest` takes it over.
 * - `between`: a message that is neither an assistant message nor a tool result `close`s the open
 *   calls (the orphan sweep: providers reject a result after one), or the calls stay open (`keep`).
 * - `consume`: a result uses up its call, so a second result with the same id answers nothing.
 */
export interface PairingRules {
  scope: "turn" | "any";
  reuse?: "first" | "latest";
  between: "close" | "keep";
  consume: boolean;
}

/** An open call: the assistant message (by index in the walked list) and its block. */
export interface OpenCall {
  assistantIndex: number;
  call: ToolCall;
}

/**
 * Why a tool result answers no open call (docs/design.md "Orphan Sweep"):
 * - `uncalled`: the most recent assistant message has no call with this id (or there is none);
 * - `answered`: that message calls the id (`calls` times), but the call already has its result (a
 *   second answer — e.g. one message calling the same id twice, as providers that number calls per
 *   response do);
 * - `closed`: that message calls the id, but `by`, a message between the call and this result,
 *   closed the open calls (only with `between: "close"`).
 */
export type OrphanReason = { kind: "uncalled" } | { kind: "answered"; calls: number } | { kind: "closed"; by: AgentMessage };

export interface PairVisitor {
  assistant?(index: number, message: AssistantMessage): void;
  /** `call` is the call the result answers under the rules, or undefined (an orphan, and `why`). */
  result?(index: number, message: ToolResultMessage, call: OpenCall | undefined, why?: OrphanReason): void;
  other?(index: number, message: AgentMessage): void;
}

/**
 * Walk a message list once, telling the visitor which call each tool result answers. Only calls
 * with a string id open; the first call per id in one message counts.
 */
export function walkToolPairs(messages: readonly AgentMessage[], rules: PairingRules, visit: PairVisitor): void {
  let open = new Map<string, OpenCall>();
  // For the reason of an orphan: the ids of the latest assistant message, those already answered,
  // and the first message that closed the open calls since.
  let turnIds = new Map<string, number>();
  let answered = new Set<string>();
  let closedBy: AgentMessage | undefined;
  // A map or set is started afresh only when it holds something (most messages leave them empty).
  messages.forEach((m, index) => {
    if (m.role === "assistant") {
      if (rules.scope === "turn" && open.size > 0) open = new Map();
      if (turnIds.size > 0) turnIds = new Map();
      if (answered.size > 0) answered = new Set();
      closedBy = undefined;
      for (const call of toolCallsOf(m)) {
        if (typeof call.id !== "string") continue;
        const seen = turnIds.get(call.id) ?? 0;
        turnIds.set(call.id, seen + 1);
        if (seen > 0) continue;
        if (rules.scope === "turn" || rules.reuse === "latest" || !open.has(call.id)) open.set(call.id, { assistantIndex: index, call });
      }
      visit.assistant?.(index, m);
    } else if (m.role === "toolResult") {
      const call = open.get(m.toolCallId);
      if (call && rules.consume) open.delete(m.toolCallId);
      const why: OrphanReason | undefined = call
        ? undefined
        : !turnIds.has(m.toolCallId)
          ? { kind: "uncalled" }
          : answered.has(m.toolCallId) || !closedBy
            ? { kind: "answered", calls: turnIds.get(m.toolCallId) ?? 1 }
            : { kind: "closed", by: closedBy };
      answered.add(m.toolCallId);
      visit.result?.(index, m, call, why);
    } else {
      if (rules.between === "close") {
        if (open.size > 0) open = new Map();
        closedBy ??= m;
      }
      visit.other?.(index, m);
    }
  });
}

/**
 * How a message that closes open calls is named in a diagnostic: `a custom message "pi-notify"`,
 * `a user message`, `a bash execution (!ls)`, `a compaction summary`.
 */
export function describeBarrier(m: AgentMessage): string {
  switch (m.role) {
    case "custom":
      return `a custom message "${m.customType}"`;
    case "bashExecution":
      return `a bash execution (!${m.command})`;
    case "branchSummary":
      return "a branch summary";
    case "compactionSummary":
      return "a compaction summary";
    default:
      return `a ${String((m as { role?: unknown }).role)} message`;
  }
}
