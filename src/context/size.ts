/**
 * The one size measure of a context (docs/design.md "Context size"): what Pi 1.6 counts for each
 * message in `estimateTokens` (pi-coding-agent `dist/core/compaction/compaction.js`) — the
 * characters that reach the provider, without timestamps, usage, `details` or JSON punctuation:
 *
 * - user, custom, toolResult: text blocks (or string content), an image counted as 4800 chars;
 * - assistant: text + thinking + per tool call its name and `JSON.stringify(arguments)`;
 * - bashExecution: command + output; branchSummary / compactionSummary: the summary;
 * - system: content, sections and the JSON of the tools it adds; any other role: 0.
 *
 * Tokens are Pi's: `ceil(chars / 4)` per message, summed (so a list's tokens are not its chars / 4).
 * A `bashExecution` with `excludeFromContext` never reaches the provider and counts 0 in the
 * context measure ({@link messageChars}); Pi's own estimate still counts it ({@link piEstimateTokens},
 * which compaction uses, as Pi does). `run`, `render --stats`, `metrics` and `budget` all measure
 * with this module; entries written for the extension (flush metrics) keep the extension's JSON measure.
 */
import type { AgentMessage } from "../session/types.js";

/** Pi's `ESTIMATED_IMAGE_CHARS`: what one image block counts for. */
export const ESTIMATED_IMAGE_CHARS = 4800;

/** Size of a message list: messages that reach the provider, characters (Pi's count) and tokens (Σ ceil(chars / 4)). */
export interface ContextSize {
  messages: number;
  chars: number;
  tokens: number;
}

/** What a measure sees in one message: the counted texts, and the images. */
export interface CountedParts {
  texts: string[];
  images: number;
}

function contentParts(content: unknown, parts: CountedParts): void {
  if (typeof content === "string") {
    parts.texts.push(content);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (block?.type === "text" && typeof block.text === "string" && block.text !== "") parts.texts.push(block.text);
    else if (block?.type === "image") parts.images++;
  }
}

function assistantParts(content: unknown, parts: CountedParts): void {
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (block?.type === "text" && typeof block.text === "string") parts.texts.push(block.text);
    else if (block?.type === "thinking" && typeof block.thinking === "string") parts.texts.push(block.thinking);
    else if (block?.type === "toolCall") parts.texts.push(String(block.name ?? ""), JSON.stringify(block.arguments) ?? "");
  }
}

/** The texts and images of one message that Pi's estimate counts (see the module comment), in message order. */
export function countedParts(message: AgentMessage): CountedParts {
  const parts: CountedParts = { texts: [], images: 0 };
  const m = message as AgentMessage & Record<string, unknown>;
  switch (message.role) {
    case "user":
    case "custom":
    case "toolResult":
      contentParts(m.content, parts);
      break;
    case "assistant":
      assistantParts(m.content, parts);
      break;
    case "bashExecution":
      parts.texts.push(String(message.command ?? ""), String(message.output ?? ""));
      break;
    case "branchSummary":
    case "compactionSummary":
      parts.texts.push(String(message.summary ?? ""));
      break;
    case "system": {
      contentParts(m.content, parts);
      const sections = m.sections as Record<string, string | null> | undefined;
      if (sections) for (const s of Object.values(sections)) if (s) parts.texts.push(s);
      if (m.toolsAdded) parts.texts.push(JSON.stringify(m.toolsAdded));
      break;
    }
  }
  return parts;
}

const ROLES = new Set(["system", "user", "assistant", "toolResult", "custom", "bashExecution", "branchSummary", "compactionSummary"]);

/** False for what Pi's `convertToLlm` drops: a `bashExecution` with `excludeFromContext`, an unknown role. */
export function reachesProvider(message: AgentMessage): boolean {
  if (message.role === "bashExecution") return !message.excludeFromContext;
  return ROLES.has(message.role);
}

const memo = new WeakMap<object, number>();

/** Characters of one message as Pi's `estimateTokens` counts them, whether or not it reaches the provider (memoized per message object: messages are never mutated). */
export function piEstimateChars(message: AgentMessage): number {
  let chars = memo.get(message);
  if (chars === undefined) {
    const parts = countedParts(message);
    chars = parts.images * ESTIMATED_IMAGE_CHARS;
    for (const t of parts.texts) chars += t.length;
    memo.set(message, chars);
  }
  return chars;
}

/** Pi's `estimateTokens` of one message, exactly: `ceil(chars / 4)` of {@link piEstimateChars}. */
export function piEstimateTokens(message: AgentMessage): number {
  return Math.ceil(piEstimateChars(message) / 4);
}

/** Characters of one message in the context measure: Pi's count, 0 for a message that never reaches the provider. */
export function messageChars(message: AgentMessage): number {
  return reachesProvider(message) ? piEstimateChars(message) : 0;
}

/** Estimated tokens of one message in the context measure: `ceil(chars / 4)` (Pi's rounding). */
export function messageTokens(message: AgentMessage): number {
  return Math.ceil(messageChars(message) / 4);
}

/**
 * The size of a message list, summed message by message (nothing is serialized).
 * @param tokensOf tokens of one message (default Pi's ceil(chars / 4); another tokenizer may count the same parts)
 */
export function contextSize(messages: readonly AgentMessage[], tokensOf: (m: AgentMessage) => number = messageTokens): ContextSize {
  let chars = 0;
  let tokens = 0;
  let count = 0;
  for (const m of messages) {
    if (!reachesProvider(m)) continue;
    count++;
    chars += messageChars(m);
    tokens += tokensOf(m);
  }
  return { messages: count, chars, tokens };
}

/** A context before → after `run`: with the pi-condense extension's phases, and as stock Pi sends it (`piOnly`). */
export interface ContextViews<T = ContextSize> {
  before: T;
  after: T;
  piOnly: { before: T; after: T };
}

/**
 * The before → after the user's Pi sends (docs/design.md "Context size"): stock Pi's own
 * projection (`piOnly`) when `run` writes for stock Pi (target `pi`: the extension is not
 * installed and switched on), the render with the extension's phases otherwise. Every command
 * prints this one.
 * @param target whom `run` writes for (`pipeline/target.ts`; `auto` decides from Pi's settings)
 */
export function sentContext<T>(views: ContextViews<T>, target: { used: "pi" | "extension" }): { before: T; after: T } {
  return target.used === "pi" ? views.piOnly : { before: views.before, after: views.after };
}
