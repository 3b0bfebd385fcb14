/**
 * Helpers for the render and query tests: fixtures, temp copies, pi-ai's own message
 * transformation as the oracle for orphan results and unanswered calls, and capturing what the CLI
 * prints.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { getBuiltinModel } from "@earendil-works/pi-ai/providers/all";
import type { Message } from "../src/session/types.js";

export const REPO = path.resolve(__dirname, "..");
export const FIXTURES = path.join(REPO, "fixtures");
export const SHARED_SESSIONS = path.resolve(__dirname, "../../shared/sessions");
export const fixture = (name: string) => path.join(FIXTURES, `${name}.jsonl`);

/** A fresh temp folder; call `cleanup` to remove it. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), `condense-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Copy a file into `dir`, keeping its name. */
export function copyTo(dir: string, file: string): string {
  const dest = path.join(dir, path.basename(file));
  copyFileSync(file, dest);
  return dest;
}

/** The text pi-ai puts into the result it inserts for a call that has none. */
export const NO_RESULT = "No result provided";

const model = getBuiltinModel("anthropic", "claude-sonnet-4-5");

/** pi-ai's own transformation of a context for a provider (what is sent after convertToLlm). */
export function piTransform(messages: Message[]): Message[] {
  return transformMessages(messages as never, model) as unknown as Message[];
}

/**
 * Structural faults of a context as the provider receives it, after pi-ai's transformation:
 * `synthetic` = results pi-ai had to insert for calls without one (calls without a result),
 * `orphans` = tool results that do not answer a call of the assistant message before them (a user
 * message in between closes the turn; a second result for the same id counts too).
 */
export function providerFaults(messages: Message[]): { synthetic: number; orphans: number } {
  const input = new Set<unknown>(messages);
  const out = piTransform(messages);
  let synthetic = 0;
  let orphans = 0;
  let open = new Set<string>();
  for (const m of out) {
    if (m.role === "toolResult") {
      if (!input.has(m)) {
        synthetic++;
        open.delete(m.toolCallId);
        continue;
      }
      if (!open.delete(m.toolCallId)) orphans++;
    } else if (m.role === "assistant") {
      open = new Set(m.content.filter((b) => b.type === "toolCall").map((b) => (b as { id: string }).id));
    } else if (m.role === "user") {
      open = new Set();
    }
  }
  return { synthetic, orphans };
}

export { runCli } from "./cli-harness.js";

/** The fixtures' time base: 2026-01-01T00:00:00.000Z. */
export const BASE_MS = 1767225600000;

/** A session whose one tool turn has the given outputs (one call each), for `run` to index. */
export function writeSession(file: string, outputs: string[], cwd = "/home/user/project"): void {
  const lines: unknown[] = [{ type: "session", version: 3, id: "0f0000aa-0000-7000-8000-0000000000aa", timestamp: "2026-01-01T00:00:00.000Z", cwd }];
  let parentId: string | null = null;
  let n = 0;
  const add = (message: Record<string, unknown>) => {
    const id = (++n).toString(16).padStart(8, "0");
    lines.push({ type: "message", id, parentId, timestamp: new Date(message.timestamp as number).toISOString(), message });
    parentId = id;
  };
  const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  const meta = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage };
  add({ role: "user", content: "Dump the logs.", timestamp: BASE_MS + 1000 });
  add({
    role: "assistant",
    content: outputs.map((_, i) => ({ type: "toolCall", id: `bash_${i}`, name: "bash", arguments: { command: `cat log${i}.txt` } })),
    ...meta,
    stopReason: "toolUse",
    timestamp: BASE_MS + 2000,
  });
  outputs.forEach((text, i) => {
    add({ role: "toolResult", toolCallId: `bash_${i}`, toolName: "bash", content: [{ type: "text", text }], isError: false, timestamp: BASE_MS + 3000 + i });
  });
  add({ role: "assistant", content: [{ type: "text", text: "Done." }], ...meta, stopReason: "stop", timestamp: BASE_MS + 4000 });
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
}
