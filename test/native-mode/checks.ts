/**
 * What native mode must hold, as assertions over message arrays pi-ai receives (after Pi's
 * `convertToLlm`):
 * - provider validity of stock Pi's context: pi-ai's own `transformMessages` adds no synthetic
 *   "No result provided" repair the original did not need; every tool result answers a call of
 *   the assistant message before it, once (system messages, which pi-ai holds back, are
 *   transparent); tool-call ids and names are the original's; the latest assistant message is the
 *   original's, thinking and signatures included;
 * - the extension switched on over the native file adds nothing twice: each chain block once,
 *   each pruner summary once, no stub inside a stub;
 * - sizes in Pi's own estimate (pi-coding-agent `estimateTokens`: provider-visible characters,
 *   ⌈chars / 4⌉ per message, summed).
 */
import { readFileSync } from "node:fs";
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { expect } from "vitest";
import { ownContextEditIds } from "../../src/entries/read.js";
import { ToolCallIndexer } from "../../src/prune/indexer.js";
import { lookupRef } from "../../src/query/query.js";
import { loadSession } from "../../src/session/session.js";
import { compareState, type Figures } from "../extension-oracle/cases.js";
import { type NativeSession, toolCallsInFile } from "./suite.js";

type Msg = { role: string; content?: unknown; toolCallId?: string; toolName?: string; timestamp?: number; provider?: string; api?: string; model?: string };
type Block = { type?: string; text?: string; id?: string; name?: string };

const blocks = (m: Msg): Block[] =>
  Array.isArray(m.content) ? (m.content as Block[]) : typeof m.content === "string" ? [{ type: "text", text: m.content }] : [];
const texts = (m: Msg): string[] => blocks(m).flatMap((b) => (b?.type === "text" && typeof b.text === "string" ? [b.text] : []));

/** Pi's estimate of a context: Σ estimateTokens(message). */
export function piTokens(estimateTokens: (m: unknown) => number, messages: unknown[]): number {
  return messages.reduce<number>((n, m) => n + estimateTokens(m), 0);
}

/** "No result provided" results pi-ai's transformMessages adds for `model`. */
export function syntheticRepairs(messages: unknown[], model: { provider: string; api: string; id: string }): number {
  const input = new Set(messages);
  const out = transformMessages(messages as never, { ...model, input: ["text", "image"] } as never) as unknown as Msg[];
  return out.filter((m) => !input.has(m) && m.role === "toolResult" && texts(m)[0] === "No result provided").length;
}

/** Tool results that answer no call of the assistant message before them (or answer one twice). */
export function unansweredResults(messages: unknown[]): string[] {
  const bad: string[] = [];
  let open = new Set<string>();
  for (const m of messages as Msg[]) {
    if (m.role === "system") continue;
    if (m.role === "assistant") open = new Set(blocks(m).flatMap((b) => (b?.type === "toolCall" && typeof b.id === "string" ? [b.id] : [])));
    else if (m.role === "toolResult") {
      if (!open.delete(String(m.toolCallId))) bad.push(String(m.toolCallId));
    } else open = new Set();
  }
  return bad;
}

const toolCalls = (m: Msg) => blocks(m).flatMap((b) => (b?.type === "toolCall" ? [`${b.id}:${b.name}`] : []));

/**
 * Assert that stock Pi's context after a native run is as valid for providers as the original's.
 * @param original what Pi sent for the file before the run
 * @param after what Pi sends for the native file
 */
export function expectProviderValid(label: string, original: unknown[], after: unknown[]): void {
  const assistants = (ms: unknown[]) => (ms as Msg[]).filter((m) => m.role === "assistant");
  const last = assistants(original).at(-1);
  if (last) {
    const model = { provider: String(last.provider), api: String(last.api), id: String(last.model) };
    expect(syntheticRepairs(after, model), `${label}: pi-ai repairs`).toBeLessThanOrEqual(syntheticRepairs(original, model));
  }
  expect(unansweredResults(after), `${label}: tool results without their call`).toEqual([]);
  // Tool-call ids and names: every assistant message Pi still sends has the calls it had.
  const byTime = new Map<number | undefined, Msg[]>();
  for (const m of assistants(original)) byTime.set(m.timestamp, [...(byTime.get(m.timestamp) ?? []), m]);
  for (const m of assistants(after)) {
    const candidates = byTime.get(m.timestamp) ?? [];
    expect(
      candidates.some((o) => JSON.stringify(toolCalls(o)) === JSON.stringify(toolCalls(m))),
      `${label}: the tool calls of the assistant message at ${m.timestamp}`,
    ).toBe(true);
  }
  expect(assistants(after).at(-1), `${label}: the latest assistant message`).toStrictEqual(last);
}

const CHAIN_ID = /^<compressed-chain id="([^"]*)"/;
const STUB_PREFIXES = ["[Summarized in pruner summary", "[Oversized output spilled to file"];

/**
 * Assert that a context (the extension switched on over a native file) holds each chain block
 * once, each of `summaries` (the pruner summary texts of the file) at most once, and no stub
 * inside a stub. @returns the number of chain blocks seen
 */
export function expectNothingTwice(label: string, messages: unknown[], summaries: string[]): number {
  const blockIds: string[] = [];
  const seen = new Map<string, number>();
  for (const m of messages as Msg[]) {
    for (const text of texts(m)) {
      const id = CHAIN_ID.exec(text)?.[1];
      if (id !== undefined) blockIds.push(id);
      seen.set(text, (seen.get(text) ?? 0) + 1);
    }
    if (m.role === "toolResult") {
      for (const text of texts(m)) {
        const stubs = STUB_PREFIXES.reduce((n, p) => n + text.split(p).length - 1, 0);
        expect(stubs, `${label}: a stub inside a stub in the result of ${m.toolCallId}`).toBeLessThanOrEqual(1);
      }
    }
  }
  expect(blockIds.length, `${label}: chain blocks ${blockIds.join(",")}`).toBe(new Set(blockIds).size);
  for (const s of new Set(summaries)) expect(seen.get(s) ?? 0, `${label}: a pruner summary sent twice`).toBeLessThanOrEqual(1);
  return blockIds.length;
}

/** The texts of a session file's pruner summaries (`context-prune-summary` custom messages). */
export function summaryTexts(fileText: string): string[] {
  const out: string[] = [];
  for (const line of fileText.split("\n")) {
    if (!line.includes('"context-prune-summary"')) continue;
    try {
      const e = JSON.parse(line);
      if (e.type === "custom_message" && typeof e.content === "string") out.push(e.content);
    } catch {
      // not an entry
    }
  }
  return out;
}

/**
 * Tool results a context edit condense wrote replaced (stubbed or omitted) whose original output
 * `condense query` cannot print: not in the index, neither by `id@timestamp` nor as a recovery
 * record (`id#n@timestamp`, whose short ref query prints).
 */
export async function unrecoverableResults(file: string): Promise<string[]> {
  const session = await loadSession(file);
  const indexer = ToolCallIndexer.fromBranch(session.branch);
  const own = ownContextEditIds(session.branch);
  const missing: string[] = [];
  for (const e of session.branch) {
    if (e.type !== "context_edit" || !own.has(e.id)) continue;
    const target = session.byId.get((e as { targetId: string }).targetId);
    const m = target?.type === "message" ? (target.message as Msg) : undefined;
    if (m?.role !== "toolResult") continue;
    const key = `${m.toolCallId}@${m.timestamp}`;
    // A recovery record is stored as `id#n@timestamp` where `id@timestamp` would be ambiguous (prune/recovery.ts).
    const disambiguated = [...indexer.records.keys()].some((k) => k.startsWith(`${m.toolCallId}#`) && k.endsWith(`@${m.timestamp}`));
    if (lookupRef(indexer, key).unknown && !disambiguated) missing.push(key);
  }
  return missing;
}

/** One session's sizes (Pi's estimate, tokens) for the reduction figures. */
export interface Figure {
  name: string;
  callsInFile: number;
  callsInContext: number;
  /** The original context, stock Pi after `run --target pi`, the extension after `run --target extension`, the extension over the native file. */
  original: number;
  piAlone: number;
  extension: number;
  extensionOverNative: number;
}

/** Percent of `before` saved. */
export const pct = (before: number, after: number): number => (before === 0 ? 0 : (100 * (before - after)) / before);

/** The figures as printed lines. */
export function reductionTable(rows: (Figure & { pi: number; ext: number })[]): string {
  const lines = rows.map(
    (r) =>
      `  ${r.name.padEnd(46)} calls ${String(r.callsInFile).padStart(3)} (${String(r.callsInContext).padStart(3)} in context)  ${r.original} → ${r.piAlone} (${r.pi.toFixed(1)}%) | ${r.extension} (${r.ext.toFixed(1)}%)`,
  );
  return `Pi's estimate (tokens) original → stock Pi after run --target pi | the extension after run --target extension:\n${lines.join("\n")}`;
}

/**
 * Everything native mode promises for one prepared session (suite.ts): run wrote; Pi alone sends
 * exactly `render --as pi-only`; a second run appends nothing; stock Pi's context and the
 * extension's over the native file are provider-valid; the extension over it sends what condense
 * renders (refs and queries too), nothing twice, and no more than Pi alone.
 * @returns the session's sizes
 */
export function expectNative(name: string, s: NativeSession, estimateTokens: (m: unknown) => number, oracle: Figures): Figure {
  const [before, native] = s.pi;
  expect(s.case.run.code, s.case.run.stderr).toBe(0);
  expect(native.openError, "Pi opens the native file").toBeUndefined();
  expect(s.piOnly?.code, s.piOnly?.stderr).toBe(0);
  expect(JSON.parse(s.piOnly!.stdout)).toStrictEqual(native.piOnly);
  expect(s.secondRun).toEqual({ code: 0, unchanged: true });
  expectProviderValid(`${name} (stock Pi)`, before.piOnly, native.piOnly);
  compareState(`${name} extension over native`, s.case.after!, native, oracle);
  expectNothingTwice(name, native.messages, summaryTexts(readFileSync(s.case.after!.piFile, "utf8")));
  expectProviderValid(`${name} (extension over native)`, before.piOnly, native.messages);
  const piAlone = piTokens(estimateTokens, native.piOnly);
  const extensionOverNative = piTokens(estimateTokens, native.messages);
  expect(extensionOverNative, `${name}: the extension over the native file sends no more than Pi alone`).toBeLessThanOrEqual(piAlone);
  expect(s.extension.run.code, s.extension.run.stderr).toBe(0);
  return {
    name,
    callsInFile: toolCallsInFile(s.case.source),
    callsInContext: (before.piOnly as Msg[]).filter((m) => m.role === "assistant").reduce((n, m) => n + toolCalls(m).length, 0),
    original: piTokens(estimateTokens, before.piOnly),
    piAlone,
    extension: piTokens(estimateTokens, s.extension.pi!.messages),
    extensionOverNative,
  };
}
