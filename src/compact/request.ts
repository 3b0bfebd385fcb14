/**
 * The text of Pi 1.6's compaction summary requests (pi-coding-agent `compaction.js`
 * `generateSummaryWithUsage`, `generateTurnPrefixSummary`; `utils.js` `serializeConversation`).
 * The conversation is serialized to plain text — `[User]:`, `[Assistant]:`, `[Assistant tool
 * calls]:`, `[Tool result]:` (cut to 2000 characters) — so the model summarizes it instead of
 * continuing it; thinking is left out.
 */
import { contentText, type Message } from "@earendil-works/pi-ai";
import { convertToLlm } from "../context/projection.js";
import type { AgentMessage } from "../session/types.js";
import { SUMMARIZATION_PROMPT, TURN_PREFIX_SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT } from "./prompts.js";

/** Pi's `TOOL_RESULT_MAX_CHARS`: a tool result in the serialized conversation is cut to this (UTF-16 units). */
export const TOOL_RESULT_MAX_CHARS = 2000;

/** The first `max` UTF-16 units of `text`, never ending on half a surrogate pair (Pi's `sliceHead`). */
export function sliceHead(text: string, max: number): string {
  const end = Math.max(0, max);
  const high = (c: number) => c >= 0xd800 && c <= 0xdbff;
  const low = (c: number) => c >= 0xdc00 && c <= 0xdfff;
  return high(text.charCodeAt(end - 1)) && low(text.charCodeAt(end)) ? text.slice(0, end - 1) : text.slice(0, end);
}

function truncateForSummary(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${sliceHead(text, max)}\n\n[... ${text.length - max} more characters truncated]`;
}

/** Pi's `serializeConversation` over pi-ai messages (after `convertToLlm`). */
export function serializeConversation(messages: Message[]): string {
  const parts: string[] = [];
  for (const msg of messages) {
    if (msg.role === "user") {
      const content = contentText(msg.content, "");
      if (content) parts.push(`[User]: ${content}`);
    } else if (msg.role === "assistant") {
      const calls: string[] = [];
      for (const block of msg.content) {
        if (block.type === "toolCall") {
          const args = Object.entries(block.arguments as Record<string, unknown>)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(", ");
          calls.push(`${block.name}(${args})`);
        }
      }
      if (msg.content.some((b) => b.type === "text")) parts.push(`[Assistant]: ${contentText(msg.content)}`);
      if (calls.length > 0) parts.push(`[Assistant tool calls]: ${calls.join("; ")}`);
    } else if (msg.role === "toolResult") {
      const content = contentText(msg.content, "");
      if (content) parts.push(`[Tool result]: ${truncateForSummary(content, TOOL_RESULT_MAX_CHARS)}`);
    }
  }
  return parts.join("\n\n");
}

/**
 * The user text of a history summary request: the conversation in `<conversation>`, the previous
 * summary in `<previous-summary>` when there is one (then Pi's update prompt), the custom
 * instructions as `Additional focus:`.
 */
export function historyPromptText(messages: AgentMessage[], previousSummary?: string, customInstructions?: string): string {
  let base = previousSummary ? UPDATE_SUMMARIZATION_PROMPT : SUMMARIZATION_PROMPT;
  if (customInstructions) base = `${base}\n\nAdditional focus: ${customInstructions}`;
  let text = `<conversation>\n${serializeConversation(convertToLlm(messages))}\n</conversation>\n\n`;
  if (previousSummary) text += `<previous-summary>\n${previousSummary}\n</previous-summary>\n\n`;
  return text + base;
}

/** The user text of a split turn's prefix summary request. */
export function turnPrefixPromptText(messages: AgentMessage[], customInstructions?: string): string {
  const text = `# Conversation\n${serializeConversation(convertToLlm(messages))}\n\n# Instructions\n${TURN_PREFIX_SUMMARIZATION_PROMPT}`;
  return customInstructions ? `${text}\n\nAdditional focus: ${customInstructions}` : text;
}

/** How Pi joins the history summary and the split turn's prefix summary. */
export function mergeSplitTurn(history: string, turnPrefix: string): string {
  return `${history}\n\n---\n\n**Turn Context (split turn):**\n\n${turnPrefix}`;
}
