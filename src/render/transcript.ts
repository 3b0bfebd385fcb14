/**
 * The readable transcript of a message list: one header line per message (role, and for tool
 * messages the tool and call id), then its content. Stubs and synthetic blocks written by the
 * pruner are marked so a reader sees what was pruned.
 */
import type { ChalkInstance } from "chalk";
import type { Message } from "../session/types.js";

const STUB_PREFIXES = ["[Summarized in pruner summary", "[Spilled: "];
const SYNTHETIC_PREFIXES = ["<compressed-chain ", "## Pruner summary"];

/** True when a tool result's text is a pruner stub. */
export function isStubText(text: string): boolean {
  return STUB_PREFIXES.some((p) => text.startsWith(p));
}

function blockText(block: unknown): string {
  const b = block as { type?: string; text?: string; thinking?: string; name?: string; id?: string; arguments?: unknown; mimeType?: string; data?: string };
  switch (b?.type) {
    case "text":
      return b.text ?? "";
    case "image":
      return `[image ${b.mimeType ?? "?"}, ${(b.data ?? "").length} base64 chars]`;
    default:
      return JSON.stringify(block);
  }
}

/**
 * Format messages as a transcript.
 * @param messages what the provider would receive
 * @param c chalk instance (level 0 for plain text)
 */
export function formatTranscript(messages: Message[], c: ChalkInstance): string {
  const out: string[] = [];
  messages.forEach((m, i) => {
    const n = c.dim(`#${i + 1}`);
    switch (m.role) {
      case "system": {
        out.push(`${n} ${c.bold.magenta("system")}`);
        out.push(typeof m.content === "string" ? m.content : m.content.map(blockText).join("\n"));
        break;
      }
      case "user": {
        const text = typeof m.content === "string" ? m.content : m.content.map(blockText).join("\n");
        const synthetic = SYNTHETIC_PREFIXES.some((p) => text.startsWith(p));
        out.push(`${n} ${c.bold.green("user")}${synthetic ? ` ${c.cyan("[pruner]")}` : ""}`);
        out.push(synthetic ? c.cyan(text) : text);
        break;
      }
      case "assistant": {
        out.push(`${n} ${c.bold.blue("assistant")} ${c.dim(`${m.provider ?? "?"}/${m.model ?? "?"}`)}`);
        for (const block of m.content) {
          if (block.type === "thinking") {
            const sig = block.thinkingSignature ? `, signed` : "";
            out.push(c.dim(`[thinking, ${block.thinking.length} chars${sig}]`));
            out.push(c.dim(block.thinking));
          } else if (block.type === "toolCall") {
            out.push(`${c.yellow("→ call")} ${block.name} ${c.dim(block.id)} ${JSON.stringify(block.arguments)}`);
          } else out.push(blockText(block));
        }
        break;
      }
      case "toolResult": {
        const text = m.content.map(blockText).join("\n");
        const stub = isStubText(text);
        const status = m.isError ? c.red(" error") : "";
        out.push(`${n} ${c.bold.yellow("toolResult")} ${m.toolName} ${c.dim(m.toolCallId)}${status}${stub ? ` ${c.cyan("[stub]")}` : ""}`);
        out.push(stub ? c.cyan(text) : text);
        break;
      }
    }
    out.push("");
  });
  return out.join("\n");
}
