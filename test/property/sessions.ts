/**
 * Generated Pi sessions for the property test (issue 12): random interleavings of user messages,
 * tool turns (calls, results — in order or not, missing, doubled, under a wrong id — custom messages
 * between them), text replies, custom messages, compactions and branches, with tool-call ids drawn
 * from a small pool of real providers' styles (so ids recur across turns and inside one message)
 * and timestamps that repeat on purpose (results of one millisecond, equal message times).
 *
 * A session is described by a {@link Script} (what fast-check generates and shrinks) and built
 * deterministically by {@link buildSession} into JSONL text. Every tool call carries a `_tag`
 * (`c1`, `c2`, …) beside its arguments so the test can follow one call through pruning and
 * pi-ai's transformation; nothing in condense or Pi reads it.
 */
import fc from "fast-check";
import type { PruneConfig } from "../../src/config/config.js";
import { defaultConfig } from "../../src/config/config.js";

/** Tool-call ids as providers write them: Anthropic, OpenAI, Kimi/OpenRouter, Copilot-style counters. */
export const ID_POOL = ["toolu_01A", "toolu_01B", "call_Xq7", "functions.read:0", "functions.bash:1", "bash_23", "bash_24"] as const;
const TOOLS = ["bash", "read", "grep", "write"] as const;

export interface CallScript {
  id: number; // index into ID_POOL
  tool: number; // index into TOOLS
  /** tiny < 100, short < 700, medium ~1-2.5k, huge ~4-7k chars. */
  size: "tiny" | "short" | "medium" | "huge";
  /** Reuse the text of an earlier result of the same tool (content-hash dedup). */
  reuseText: boolean;
  error: boolean;
  stringContent: boolean;
  image: boolean;
  /** What answers the call: its result, none, two results, or a result under another id. */
  answer: "result" | "none" | "twice" | "wrongId";
  /** The result reuses the timestamp of the previous result in the session. */
  sameTimestamp: boolean;
  /** Large arguments (error purge takes them when the call failed). */
  bigArgs: boolean;
}

export type Step =
  | { kind: "user"; sameTimestamp: boolean }
  | { kind: "turn"; calls: CallScript[]; duplicateId: boolean; shuffle: boolean; barrierAt: number; text: boolean }
  | { kind: "reply"; thinking: boolean; sameTimestamp: boolean }
  | { kind: "custom" }
  | { kind: "compact"; back: number }
  | { kind: "branch"; back: number; summary: boolean };

export interface Script {
  steps: Step[];
  config: ConfigScript;
}

export interface ConfigScript {
  minBatchChars: 0 | 200 | 1000;
  batchingMode: "turn" | "agent-message";
  rollingWindow: 0 | 1 | 3;
  chain: boolean;
  smallSpill: boolean;
  dedup: boolean;
  purgeMinArgChars: 50 | 500;
}

const call: fc.Arbitrary<CallScript> = fc.record({
  id: fc.nat({ max: ID_POOL.length - 1 }),
  tool: fc.nat({ max: TOOLS.length - 1 }),
  size: fc.constantFrom("tiny", "short", "medium", "medium", "huge"),
  reuseText: fc.constantFrom(true, false, false, false, false),
  error: fc.constantFrom(false, false, false, false, true),
  stringContent: fc.constantFrom(false, false, false, false, false, false, true),
  image: fc.constantFrom(false, false, false, false, false, false, false, true),
  answer: fc.constantFrom("result", "result", "result", "result", "result", "result", "none", "twice", "wrongId"),
  sameTimestamp: fc.constantFrom(false, false, false, true),
  bigArgs: fc.constantFrom(false, false, false, true),
});

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("user" as const), sameTimestamp: fc.constantFrom(false, false, false, false, true) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("turn" as const),
      calls: fc.array(call, { minLength: 1, maxLength: 3 }),
      duplicateId: fc.constantFrom(false, false, false, true),
      shuffle: fc.constantFrom(false, false, false, true),
      barrierAt: fc.integer({ min: -4, max: 2 }),
      text: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("reply" as const),
      thinking: fc.boolean(),
      sameTimestamp: fc.constantFrom(false, false, false, false, true),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("custom" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), back: fc.nat({ max: 12 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("branch" as const), back: fc.nat({ max: 8 }), summary: fc.boolean() }) },
);

const configScript: fc.Arbitrary<ConfigScript> = fc.record({
  minBatchChars: fc.constantFrom(0 as const, 200 as const, 1000 as const),
  batchingMode: fc.constantFrom("turn" as const, "agent-message" as const),
  rollingWindow: fc.constantFrom(0 as const, 1 as const, 3 as const),
  chain: fc.constantFrom(true, true, false),
  smallSpill: fc.boolean(),
  dedup: fc.constantFrom(true, true, false),
  purgeMinArgChars: fc.constantFrom(50 as const, 500 as const),
});

/** A script: up to 30 steps, starting with a user message, and a configuration. */
export const scriptArbitrary: fc.Arbitrary<Script> = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 30 }).map((s) => [{ kind: "user", sameTimestamp: false } as Step, ...s]),
  config: configScript,
});

/** The pruning configuration a script runs under. */
export function configOf(c: ConfigScript): PruneConfig {
  const base = defaultConfig();
  return {
    ...base,
    minBatchChars: c.minBatchChars,
    batchingMode: c.batchingMode,
    dedupByContentHash: c.dedup,
    spillThreshold: c.smallSpill ? 3000 : base.spillThreshold,
    spillPreviewBytes: c.smallSpill ? 400 : base.spillPreviewBytes,
    chainCompression: { ...base.chainCompression, enabled: c.chain, rollingWindow: c.rollingWindow },
    purgeErrors: { ...base.purgeErrors, minArgChars: c.purgeMinArgChars },
  };
}

const BASE_MS = 1767225600000;
const WORDS = ["order", "cart", "invoice", "refund", "token", "stock", "session", "price", "error:", "src/app.ts:12", "FAIL", "exit code 1", "ok"];
const META = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
const USAGE = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

function textOf(seed: number, size: CallScript["size"]): string {
  const target = { tiny: 20 + (seed % 60), short: 150 + (seed % 500), medium: 900 + (seed % 1500), huge: 4000 + (seed % 3000) }[size];
  const words: string[] = [];
  let n = 0;
  let k = seed;
  while (n < target) {
    k = (k * 1103515245 + 12345) % 2147483648;
    const w = WORDS[k % WORDS.length];
    words.push(k % 7 === 0 ? `${w}\n` : w);
    n += w.length + 1;
  }
  return words.join(" ");
}

/** Builds the JSONL text of a script (header first), deterministic for one script. */
class Builder {
  readonly lines: Record<string, unknown>[] = [];
  /** Entry ids on the current path, root first. */
  path: string[] = [];
  private n = 0;
  private clock = BASE_MS;
  private lastResultTs = BASE_MS;
  private lastMessageTs = BASE_MS;
  private tags = 0;
  private seed = 1;
  private readonly texts = new Map<string, string[]>();

  constructor() {
    this.lines.push({
      type: "session",
      version: 3,
      id: "0f000000-0000-7000-8000-00000000beef",
      timestamp: new Date(BASE_MS).toISOString(),
      cwd: "/home/user/p",
    });
  }

  private add(entry: Record<string, unknown>): string {
    this.n++;
    this.clock += 1000;
    const id = this.n.toString(16).padStart(8, "0");
    this.lines.push({ ...entry, id, parentId: this.path.length > 0 ? this.path[this.path.length - 1] : null, timestamp: new Date(this.clock).toISOString() });
    this.path.push(id);
    return id;
  }

  private messageTs(same: boolean): number {
    if (!same) this.lastMessageTs = this.clock + 1000;
    return this.lastMessageTs;
  }

  message(message: Record<string, unknown>): string {
    return this.add({ type: "message", message });
  }

  user(same: boolean): void {
    this.message({ role: "user", content: `do step ${this.n}`, timestamp: this.messageTs(same) });
  }

  reply(thinking: boolean, same: boolean): void {
    const content = [
      ...(thinking ? [{ type: "thinking", thinking: "weighing it", thinkingSignature: `sig${this.n}` }] : []),
      { type: "text", text: `done ${this.n}` },
    ];
    this.message({ role: "assistant", content, ...META, usage: USAGE, stopReason: "stop", timestamp: this.messageTs(same) });
  }

  custom(): void {
    this.add({ type: "custom_message", customType: "pi-notify", content: `notice ${this.n}`, display: true, details: {} });
  }

  private resultText(c: CallScript, tool: string): string {
    const earlier = this.texts.get(tool) ?? [];
    if (c.reuseText && earlier.length > 0) return earlier[earlier.length - 1];
    const text = textOf(this.seed++ * 7919, c.size);
    earlier.push(text);
    this.texts.set(tool, earlier);
    return text;
  }

  private result(id: string, tool: string, c: CallScript): void {
    const text = this.resultText(c, tool);
    const ts = c.sameTimestamp ? this.lastResultTs : this.clock + 1000;
    this.lastResultTs = ts;
    const content = c.stringContent ? text : [{ type: "text", text }, ...(c.image ? [{ type: "image", data: PNG, mimeType: "image/png" }] : [])];
    this.message({ role: "toolResult", toolCallId: id, toolName: tool, content, isError: c.error, timestamp: ts });
  }

  turn(s: Extract<Step, { kind: "turn" }>): void {
    const ids = s.calls.map((c, i) => (s.duplicateId && i > 0 ? ID_POOL[s.calls[0].id] : ID_POOL[c.id]));
    const blocks = s.calls.map((c, i) => ({
      type: "toolCall",
      id: ids[i],
      name: TOOLS[c.tool],
      arguments: c.bigArgs ? { path: `f${this.n}.ts`, content: "x".repeat(600) } : { path: `f${this.n}-${i}.ts` },
      _tag: `c${++this.tags}`,
    }));
    const content = [...(s.text ? [{ type: "text", text: "working" }] : []), ...blocks];
    this.message({ role: "assistant", content, ...META, usage: USAGE, stopReason: "toolUse", timestamp: this.messageTs(false) });
    const order = s.calls.map((_, i) => i);
    if (s.shuffle) order.reverse();
    order.forEach((i, k) => {
      if (k === s.barrierAt) this.custom();
      const c = s.calls[i];
      const tool = TOOLS[c.tool];
      if (c.answer === "none") return;
      this.result(c.answer === "wrongId" ? `${ids[i]}x` : ids[i], tool, c);
      if (c.answer === "twice") this.result(ids[i], tool, c);
    });
  }

  /** A compaction entry keeping the branch from `back` message entries before its end. */
  compact(back: number): void {
    const messages = this.path.filter((id) => (this.lines.find((l) => l.id === id) as { type?: string } | undefined)?.type === "message");
    if (messages.length === 0) return;
    const firstKept = messages[Math.max(0, messages.length - 1 - back)];
    this.add({ type: "compaction", summary: `compacted ${this.n}`, firstKeptEntryId: firstKept, tokensBefore: 1000 });
  }

  /** Go back `back` entries on the current path and continue from there (a new branch). */
  branch(back: number, summary: boolean): void {
    if (this.path.length <= 1) return;
    const keep = Math.max(1, this.path.length - 1 - back);
    const from = this.path[this.path.length - 1];
    this.path = this.path.slice(0, keep);
    if (summary) this.add({ type: "branch_summary", fromId: from, summary: `left branch at ${from}` });
  }

  text(): string {
    return this.lines.map((l) => `${JSON.stringify(l)}\n`).join("");
  }
}

/** The JSONL text of a script's session. */
export function buildSession(script: Script): string {
  const b = new Builder();
  for (const s of script.steps) {
    switch (s.kind) {
      case "user":
        b.user(s.sameTimestamp);
        break;
      case "turn":
        b.turn(s);
        break;
      case "reply":
        b.reply(s.thinking, s.sameTimestamp);
        break;
      case "custom":
        b.custom();
        break;
      case "compact":
        b.compact(s.back);
        break;
      case "branch":
        b.branch(s.back, s.summary);
        break;
    }
  }
  return b.text();
}
