#!/usr/bin/env node
// Derives fixtures/compact-overflow-rescue.jsonl from the shared session
// pimono-large-session.migrated-v3.jsonl (MIT, badlogic/pi-mono): a real Anthropic session
// (claude-sonnet-4-5, 200k window) whose recorded usage reached ~178k tokens, ended the way a
// session ends when its next request overflows the window: the user's next message, then the
// assistant message pi-ai records for the failed request (no content, zero usage,
// stopReason "error", Anthropic's "prompt is too long" error text — what pi-ai's
// isContextOverflow detects).
//
// To keep the file small: the first HEAD_ENTRIES and the last TAIL_ENTRIES entries of the
// (linear) branch, the tail re-parented onto the head; every kept entry keeps its shape (ids,
// parents, roles, tool-call ids and names, usage, stop reasons, timestamps) but long strings are
// cut — hard in the head (what a compaction summarizes), lightly in the tail (what it keeps, which
// must still weigh more than keepRecentTokens) — and thinking signatures to SIGNATURE_CHARS; each
// cut is marked with "…[cut]".
//
// Usage: node test/derive-overflow-fixture.mjs [shared sessions folder]
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SHARED = process.argv[2] ?? path.resolve(ROOT, "../shared/sessions");
const SOURCE = path.join(SHARED, "pimono-large-session.migrated-v3.jsonl");
const TARGET = path.join(ROOT, "fixtures/compact-overflow-rescue.jsonl");

const HEAD_ENTRIES = 60;
const TAIL_ENTRIES = 190;
/** Caps (characters) for the head (summarized by a compaction) and the tail (what a compaction keeps). */
const HEAD = { text: 200, output: 300, arg: 120 };
const TAIL = { text: 1200, output: 2000, arg: 1000 };
const SIGNATURE_CHARS = 12;
const cut = (s, n) => (typeof s === "string" && s.length > n ? `${s.slice(0, n)}…[cut]` : s);

function trimArgs(value, max) {
  if (typeof value === "string") return cut(value, max);
  if (Array.isArray(value)) return value.map((v) => trimArgs(v, max));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, trimArgs(v, max)]));
  return value;
}

function trimBlock(block, max, caps) {
  if (block.type === "text") return { ...block, text: cut(block.text, max) };
  if (block.type === "thinking") {
    return {
      ...block,
      thinking: cut(block.thinking, caps.text),
      ...(block.thinkingSignature ? { thinkingSignature: cut(block.thinkingSignature, SIGNATURE_CHARS) } : {}),
    };
  }
  if (block.type === "toolCall") return { ...block, arguments: trimArgs(block.arguments, caps.arg) };
  if (block.type === "image") return { ...block, data: "" };
  return block;
}

const [header, ...entries] = readFileSync(SOURCE, "utf8")
  .split("\n")
  .filter((l) => l !== "")
  .map((l) => JSON.parse(l));
// The session is linear: its first HEAD_ENTRIES and last TAIL_ENTRIES entries, the first of the
// tail re-parented onto the last of the head.
const head = entries.slice(0, HEAD_ENTRIES);
const tail = entries.slice(-TAIL_ENTRIES);
tail[0] = { ...tail[0], parentId: head[head.length - 1].id };
const trim = (entry, caps) => {
  if (entry.type !== "message") return entry;
  const m = entry.message;
  const max = m.role === "toolResult" ? caps.output : caps.text;
  const content = typeof m.content === "string" ? cut(m.content, max) : Array.isArray(m.content) ? m.content.map((b) => trimBlock(b, max, caps)) : m.content;
  return { ...entry, message: { ...m, content, ...(m.errorMessage ? { errorMessage: cut(m.errorMessage, caps.text) } : {}) } };
};
const out = [header, ...head.map((e) => trim(e, HEAD)), ...tail.map((e) => trim(e, TAIL))];

const last = out[out.length - 1];
const lastMs = last.message.timestamp;
const userMs = lastMs + 45_000;
const failedMs = userMs + 2_000;
const iso = (ms) => new Date(ms).toISOString();
out.push({
  type: "message",
  id: "0f3e1a01",
  parentId: last.id,
  timestamp: iso(userMs),
  message: { role: "user", content: [{ type: "text", text: "Fix those type errors in the TUI package, then rebuild." }], timestamp: userMs },
});
out.push({
  type: "message",
  id: "0f3e1a02",
  parentId: "0f3e1a01",
  timestamp: iso(failedMs),
  message: {
    role: "assistant",
    content: [],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "error",
    errorMessage:
      '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 203114 tokens > 200000 maximum"},"request_id":"req_011CVhfixture0000000000"}',
    timestamp: failedMs,
  },
});
writeFileSync(TARGET, out.map((e) => `${JSON.stringify(e)}\n`).join(""));
console.log(`wrote ${TARGET}: ${out.length} lines, ${readFileSync(TARGET).length} bytes`);
