/**
 * The readable transcript of a rendered context (docs/design.md §7, `render` default format): one
 * header line per message the model receives — its number, its role as sent, where it came from
 * when Pi turned one of its own roles into a user message — then its content. What the pruner put
 * there is tagged so a reader sees it even without colors: `[stub tN]` on stub-replaced results,
 * `[pruner summary]` on summary messages, `[compressed chain bN]` on chain blocks, `[purged args]`
 * on tool calls whose arguments were purged. Thinking shows its size and whether it is signed.
 */
import type { ChalkInstance } from "chalk";
import { toLlmMessage } from "../context/projection.js";
import { CUSTOM_TYPES } from "../entries/types.js";
import type { AgentMessage, Message } from "../session/types.js";
import { isPurgedArguments } from "./error-purge.js";
import { compressedChainId, isStubText, stubRef } from "../context/vocabulary.js";

function blockText(block: unknown): string {
  const b = block as { type?: string; text?: string; mimeType?: string; data?: string };
  switch (b?.type) {
    case "text":
      return b.text ?? "";
    case "image":
      return `[image ${b.mimeType ?? "?"}, ${(b.data ?? "").length} base64 chars]`;
    default:
      return JSON.stringify(block);
  }
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map(blockText).join("\n");
}

/** Where a user message came from, when it was not typed by the user. */
function origin(m: AgentMessage): { label: string; pruner: boolean } | undefined {
  switch (m.role) {
    case "custom":
      return m.customType === CUSTOM_TYPES.summary ? { label: "pruner summary", pruner: true } : { label: `custom message ${m.customType}`, pruner: false };
    case "bashExecution":
      return { label: "bash execution", pruner: false };
    case "branchSummary":
      return { label: "branch summary", pruner: false };
    case "compactionSummary":
      return { label: "compaction summary", pruner: false };
    default:
      return undefined;
  }
}

function indent(text: string, prefix: string): string {
  return text
    .split("\n")
    .map((l) => prefix + l)
    .join("\n");
}

/**
 * Format a rendered context as a transcript.
 * @param messages the pruned messages before `convertToLlm` (plain pi-ai messages work too);
 *   messages `convertToLlm` drops are not shown
 * @param c chalk instance (level 0 for plain text)
 * @returns the transcript, messages separated by blank lines
 */
export function formatTranscript(messages: AgentMessage[], c: ChalkInstance): string {
  const out: string[] = [];
  let n = 0;
  for (const original of messages) {
    const m: Message | undefined = toLlmMessage(original);
    if (!m) continue;
    n++;
    const num = c.dim(`#${n}`);
    switch (m.role) {
      case "system": {
        out.push(`${num} ${c.bold.magenta("system")}`);
        out.push(contentText(m.content));
        break;
      }
      case "user": {
        const text = contentText(m.content);
        const from = origin(original);
        const chain = compressedChainId(text);
        const tags: string[] = [];
        if (from) tags.push(from.pruner ? c.cyan(`[${from.label}]`) : c.dim(`(${from.label})`));
        if (chain !== undefined) tags.push(c.cyan(`[compressed chain ${chain}]`));
        out.push([`${num} ${c.bold.green("user")}`, ...tags].join(" "));
        out.push(from?.pruner || chain !== undefined ? c.cyan(text) : text);
        break;
      }
      case "assistant": {
        const stop = m.stopReason && m.stopReason !== "stop" && m.stopReason !== "toolUse" ? ` ${c.red(`(${m.stopReason})`)}` : "";
        out.push(`${num} ${c.bold.blue("assistant")} ${c.dim(`${m.provider ?? "?"}/${m.model ?? "?"}`)}${stop}`);
        for (const block of m.content ?? []) {
          if (block?.type === "thinking") {
            const signed = block.thinkingSignature ? ", signed" : "";
            const redacted = (block as { redacted?: boolean }).redacted ? ", redacted" : "";
            // A damaged file may hold a thinking block without its text: shown as 0 chars.
            const thinking = typeof block.thinking === "string" ? block.thinking : "";
            out.push(c.dim(`[thinking, ${thinking.length} chars${signed}${redacted}]`));
            if (thinking) out.push(c.dim(indent(thinking, "  ")));
          } else if (block?.type === "toolCall") {
            const purged = isPurgedArguments(block.arguments);
            const head = `${c.yellow("→ call")} ${block.name} ${c.dim(block.id)}${purged ? ` ${c.cyan("[purged args]")}` : ""}`;
            out.push(`${head} ${purged ? c.cyan(JSON.stringify(block.arguments)) : JSON.stringify(block.arguments)}`);
          } else out.push(blockText(block));
        }
        break;
      }
      case "toolResult": {
        const text = contentText(m.content);
        const stub = isStubText(text);
        const tags: string[] = [];
        if (m.isError) tags.push(c.red("error"));
        if (stub) tags.push(c.cyan(`[stub ${stubRef(text) ?? "?"}]`));
        out.push([`${num} ${c.bold.yellow("toolResult")} ${m.toolName} ${c.dim(m.toolCallId)}`, ...tags].join(" "));
        out.push(stub ? c.cyan(text) : text);
        break;
      }
    }
    out.push("");
  }
  return out.join("\n");
}
