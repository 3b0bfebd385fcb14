/**
 * Render phase 2, error purge (docs/design.md §7; docs/design.md "Error Purge"): the arguments
 * of a failed tool call are replaced by a small marker once the failure is at least
 * `cooldownTurns` assistant turns old and the arguments are at least `minArgChars` long. The
 * error result itself stays as it is, so the model still sees what went wrong.
 *
 * This is the extension's `purgeErroredArgs` (pi-condense 2.9.1 `src/error-purge.ts`), rule for
 * rule, because `render` promises what Pi sends (docs/design.md §7: the extension's code wins;
 * docs/extension-parity.md):
 * - a failure is a `toolResult` with `isError: true` in the phase's input, i.e. after
 *   stub-replace: a stubbed result says `isError: false`, so a failed call whose result was
 *   summarized keeps its arguments;
 * - failures are keyed by the bare tool-call id, the latest one winning; its turn is the number of
 *   assistant messages up to the result; every `toolCall` block with that id, in any assistant
 *   message, is purged once `turns so far − that turn ≥ cooldownTurns` — so with a reused id
 *   (`bash_23`) one failure also purges another occurrence's arguments, as in the extension.
 * No call/result pairing is involved (the extension pairs nothing here).
 * Sizes are `JSON.stringify(arguments).length` (UTF-16 chars).
 */
import { callsInOrder } from "../prune/occurrences.js";
import type { AgentMessage, AssistantMessage, ToolCall } from "../session/types.js";

export interface ErrorPurgeOptions {
  enabled: boolean;
  /** Assistant turns a failure must age before its arguments are purged. */
  cooldownTurns: number;
  /** Minimum length of `JSON.stringify(arguments)`, in UTF-16 chars. */
  minArgChars: number;
}

/** The marker that replaces purged arguments: `{"_purged": "<purged-errored-args size=\"N\"/>"}`, N in chars. */
export function purgedArguments(size: number): { _purged: string } {
  return { _purged: `<purged-errored-args size="${size}"/>` };
}

/** True when a tool call's arguments are already a purge marker. */
export function isPurgedArguments(args: unknown): boolean {
  if (!args || typeof args !== "object") return false;
  const keys = Object.keys(args);
  return keys.length === 1 && keys[0] === "_purged" && typeof (args as { _purged: unknown })._purged === "string";
}

function argChars(args: unknown): number {
  return JSON.stringify(args)?.length ?? 0;
}

/**
 * Purge the arguments of cooled-down failed calls (the extension's rules, above).
 * @param messages the stub-replace phase's output
 * @returns the same array when nothing was purged; otherwise a copy in which only the changed
 *   assistant messages (and their changed blocks) are new objects
 */
export function purgeErroredArgs(messages: AgentMessage[], options: ErrorPurgeOptions): AgentMessage[] {
  if (!options.enabled) return messages;
  // Pass 1: bare id of each failed result → the assistant turn count at that result (latest wins).
  const erroredAtTurn = new Map<string, number>();
  let turn = 0;
  for (const m of messages) {
    if (m.role === "assistant") turn++;
    else if (m.role === "toolResult" && m.isError === true) erroredAtTurn.set(m.toolCallId, turn);
  }
  if (erroredAtTurn.size === 0) return messages;
  const currentTurn = turn;

  // Pass 2: replace the arguments that qualify, in every assistant message.
  let out: AgentMessage[] | null = null;
  messages.forEach((m, index) => {
    if (m.role !== "assistant" || !Array.isArray(m.content)) return;
    let content: AssistantMessage["content"] | null = null;
    m.content.forEach((block, b) => {
      if (block?.type !== "toolCall") return;
      const errorTurn = erroredAtTurn.get(block.id);
      if (errorTurn === undefined || currentTurn - errorTurn < options.cooldownTurns) return;
      const size = argChars(block.arguments);
      if (size < options.minArgChars) return;
      content ??= m.content.slice();
      content[b] = { ...block, arguments: purgedArguments(size) } as ToolCall;
    });
    if (!content) return;
    out ??= messages.slice();
    out[index] = { ...m, content };
  });
  return out ?? messages;
}

/**
 * Error purge per occurrence, for stock Pi's context edits (native mode, docs/design.md §11): the
 * extension's cooldown and size rules and its turn count, but a failed result purges only the call
 * it answers — paired in order inside its turn (`prune/occurrences.ts` `callsInOrder`), across a
 * message between them too — never another call that reuses its id; arguments already purged stay
 * as they are. Keyed by the bare id, the latest failure hides an earlier one; when the orphan sweep
 * then removes the later one, the next run sees the earlier one and purges: not a fixed point.
 * Per occurrence, a run on the projection with its own edits applied sees a subset of the failures,
 * each answering the same call and no older (removing messages only lowers a turn count), so it
 * purges nothing new.
 * @param messages the stub-replace phase's output
 * @returns the same array when nothing was purged; otherwise a copy with new assistant messages
 */
export function purgeErroredArgsByOccurrence(messages: AgentMessage[], options: ErrorPurgeOptions): AgentMessage[] {
  if (!options.enabled) return messages;
  const paired = callsInOrder(messages);
  const failedAtTurn = new Map<ToolCall, number>();
  let turn = 0;
  messages.forEach((m, index) => {
    if (m.role === "assistant") turn++;
    const call = paired.get(index);
    if (m.role === "toolResult" && m.isError === true && call) failedAtTurn.set(call, turn);
  });
  if (failedAtTurn.size === 0) return messages;
  let out: AgentMessage[] | null = null;
  messages.forEach((m, index) => {
    if (m.role !== "assistant" || !Array.isArray(m.content)) return;
    let content: AssistantMessage["content"] | null = null;
    m.content.forEach((block, b) => {
      const errorTurn = failedAtTurn.get(block as ToolCall);
      if (errorTurn === undefined || turn - errorTurn < options.cooldownTurns) return;
      const call = block as ToolCall;
      const size = argChars(call.arguments);
      if (size < options.minArgChars || isPurgedArguments(call.arguments)) return;
      content ??= m.content.slice();
      content[b] = { ...call, arguments: purgedArguments(size) };
    });
    if (!content) return;
    out ??= messages.slice();
    out[index] = { ...m, content };
  });
  return out ?? messages;
}
