/**
 * How Pi hands the context to an extension's `context` handler and takes its answer back (Pi 1.6
 * `ExtensionRunner.emitContext`, `dist/core/extensions/runner.js`): the handler sees the
 * conversation without the system messages (prompt and tool declarations); when it returns a
 * changed list, Pi puts back one leading system message that replays all of them
 * (`getCurrentSystemMessage` of pi-ai) in front of it; an unchanged list keeps every system
 * message in place. So once the extension prunes anything, a session's system messages reach the
 * provider as one message at the top, wherever they stood.
 */
import { getCurrentSystemMessage } from "@earendil-works/pi-ai/utils/transcript";
import type { AgentMessage } from "../session/types.js";

/** The messages a `context` handler sees: all but the system messages. */
export function handlerView(messages: AgentMessage[]): AgentMessage[] {
  return messages.some((m) => m.role === "system") ? messages.filter((m) => m.role !== "system") : messages;
}

/**
 * What Pi sends after a `context` handler answered `returned` for `visible` (= `handlerView(projected)`).
 * @returns `projected` itself when the handler changed nothing (same messages, same order)
 */
export function restoreSystemMessages(projected: AgentMessage[], visible: AgentMessage[], returned: AgentMessage[]): AgentMessage[] {
  if (returned.length === visible.length && returned.every((m, i) => m === visible[i])) return projected;
  if (visible === projected) return returned;
  const head = getCurrentSystemMessage(projected as never) as AgentMessage | undefined;
  return head ? [head, ...returned] : returned;
}
