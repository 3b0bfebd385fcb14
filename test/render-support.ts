/**
 * Helpers for the render and query tests: fixtures, temp copies, pi-ai's own message
 * transformation as the oracle for orphan results and unanswered calls, and capturing what the CLI
 * prints.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { getBuiltinModel } from "@earendil-works/pi-ai/providers/all";
import { vi } from "vitest";
import { main } from "../src/cli/main.js";
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

/** Run the CLI in-process and capture stdout, stderr and the exit code. */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk: unknown) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
    stderr += String(chunk);
    return true;
  });
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    const code = await main(["node", "condense", ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
