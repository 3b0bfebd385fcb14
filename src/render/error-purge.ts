/**
 * Render phase 2, error purge (docs/design.md §7; docs/design.md "Error Purge"): the arguments
 * of a failed tool call are replaced by a small marker once the failure is at least
 * `cooldownTurns` assistant turns old and the arguments are at least `minArgChars` long. The
 * error result itself stays as it is, so the model still sees what went wrong.
 *
 * Ages count assistant messages: a failure answered after the k-th assistant message (1-based) of
 * an array holding n assistant messages is n − k turns old.
 *
 * One deliberate difference from the extension, which keys failures by the bare provider id (so a
 * reused id like `bash_23` let one failure purge another, successful call's arguments): a failed
 * result is tied to the call that opened it — the most recent assistant message before the result,
 * when that message holds a call with the result's id — and only that message's blocks with that
 * id are purged. A result whose call is not in that message (an orphan) purges nothing.
 */
import { type PairingRules, walkToolPairs } from "../context/vocabulary.js";
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

/** A failure is tied to a call of the most recent assistant message; other messages do not close it. */
const PURGE_PAIRING: PairingRules = { scope: "turn", between: "keep", consume: false };

/**
 * Purge the arguments of cooled-down failed calls.
 * @param messages the stub-replace phase's output
 * @param errorsFrom the same messages before stub-replace (index for index): a summarized failure
 *   keeps counting as a failure although its stub says `isError: false`, so summarizing a failed
 *   call never brings its purged arguments back
 * @returns the same array when nothing was purged; otherwise a copy in which only the changed
 *   assistant messages (and their changed blocks) are new objects
 */
export function purgeErroredArgs(messages: AgentMessage[], options: ErrorPurgeOptions, errorsFrom: AgentMessage[] = messages): AgentMessage[] {
  if (!options.enabled) return messages;
  // Pass 1: which (assistant index, call id) failed, and after which assistant turn.
  const failedAt = new Map<number, Map<string, number>>();
  let turn = 0;
  walkToolPairs(messages, PURGE_PAIRING, {
    assistant: () => {
      turn++;
    },
    result: (i, m, opened) => {
      if (!opened) return;
      const source = errorsFrom.length === messages.length ? errorsFrom[i] : m;
      const failed = m.isError === true || (source.role === "toolResult" && source.toolCallId === m.toolCallId && source.isError === true);
      if (!failed) return;
      let calls = failedAt.get(opened.assistantIndex);
      if (!calls) {
        calls = new Map();
        failedAt.set(opened.assistantIndex, calls);
      }
      calls.set(m.toolCallId, turn);
    },
  });
  if (failedAt.size === 0) return messages;
  const currentTurn = turn;

  // Pass 2: replace the arguments that qualify.
  let out: AgentMessage[] | null = null;
  for (const [index, calls] of failedAt) {
    const assistant = messages[index] as AssistantMessage;
    let content: AssistantMessage["content"] | null = null;
    assistant.content.forEach((block, b) => {
      if (block?.type !== "toolCall") return;
      const errorTurn = calls.get(block.id);
      if (errorTurn === undefined || currentTurn - errorTurn < options.cooldownTurns) return;
      if (isPurgedArguments(block.arguments)) return;
      const size = argChars(block.arguments);
      if (size < options.minArgChars) return;
      content ??= assistant.content.slice();
      content[b] = { ...block, arguments: purgedArguments(size) } as ToolCall;
    });
    if (!content) continue;
    out ??= messages.slice();
    out[index] = { ...assistant, content };
  }
  return out ?? messages;
}
