/**
 * The invariants of issue 12, checked on one session in-process: `planRun` with the deterministic
 * summarizer (nothing written; sidecars kept in memory), then the render of the branch with the
 * planned entries, against the render of the session as read.
 *
 * 1. Stubs: every tool result the render stubs names a ref whose `query` returns that very result:
 *    its text exactly, and the arguments of the call it answers in order in its turn (a dedup
 *    alias returns its original — text equal under the dedup normalization: CRLF → LF, trailing
 *    whitespace per line, trimmed — and its original's call).
 * 2. Nothing lost: every tool result Pi's own projection holds (what stock Pi sends) is in the
 *    rendered request — as it is, as a stub (1.), or relocated into a compressed-chain block — or
 *    `query` of its own occurrence key, or of a short ref, returns its text under that key (`id@ts`,
 *    or `id#n@ts` for one of several results sharing `id@ts`).
 * 3. Pairing, on the request as the provider receives it (after `convertToLlm` and pi-ai's
 *    `transformMessages` for the session's own model): per assistant message, the results in the
 *    run of tool results right after it are matched to its calls in order per id (the k-th result
 *    with an id answers the k-th call with it); a call is "answered once" when exactly one real
 *    result matches it (a result pi-ai inserted — "No result provided" — is not real). Every call
 *    that was answered once in the request before `run` is answered once after it (so the only
 *    synthetic repairs are those the request before `run` already needed), and no tool result
 *    after `run` is left unmatched. Calls are followed by the `_tag` the generator puts on them.
 * 4. Size: the rendered request after `run` is never larger (JSON characters) than before.
 * 5. Nothing the render drops is summarized as if the model saw it: no ref of a summary `run`
 *    wrote names a result the orphan sweep removes.
 * 6. A second `run` on the file with the entries appended has nothing left to append.
 */
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { getBuiltinModel } from "@earendil-works/pi-ai/providers/all";
import type { PruneConfig } from "../../src/config/config.js";
import { projectBranch } from "../../src/context/projection.js";
import { occurrenceKey, parseOccurrenceKey, resultKeyOf, stubRef } from "../../src/context/vocabulary.js";
import { CUSTOM_TYPES } from "../../src/entries/types.js";
import { callsInOrder, contextOccurrences } from "../../src/prune/occurrences.js";
import { planRun } from "../../src/pipeline/plan.js";
import { sessionView } from "../../src/pipeline/view.js";
import { resultTextOf } from "../../src/prune/capture.js";
import { normalizeResult } from "../../src/prune/content-hash.js";
import { ToolCallIndexer } from "../../src/prune/indexer.js";
import { lookupRef, recordBody } from "../../src/query/query.js";
import { renderBranch, type Rendered } from "../../src/render/render.js";
import { contextSize } from "../../src/context/size.js";
import { parseSessionText } from "../../src/session/reader.js";
import { buildSession as indexSession } from "../../src/session/session.js";
import type { AgentMessage, Message, SessionEntry, ToolCall, ToolResultMessage } from "../../src/session/types.js";
import { deterministicSummarizer } from "../../src/summarize/deterministic.js";

const MODEL = getBuiltinModel("anthropic", "claude-sonnet-4-5");
const NOW_MS = Date.parse("2026-06-01T00:00:00.000Z");

/** What one session came to: the violations found, and counts for the test's figures. */
export interface Checked {
  violations: string[];
  stubs: number;
  recovered: number;
  withheld: boolean;
  entries: number;
  calls: number;
}

/** Run the main job on a session's text in memory and check the four invariants. */
export async function checkSession(text: string, config: PruneConfig): Promise<Checked> {
  const session = indexSession(parseSessionText("/virtual/s.jsonl", text));
  const view = sessionView(session, config);
  const before = view.rendered;
  const plan = await planRun(view, { summarizer: deterministicSummarizer, concurrency: 1, nowMs: NOW_MS, targetPath: session.path });
  const after = renderBranch(plan.afterBranch, config);
  const indexer = ToolCallIndexer.fromBranch(plan.afterBranch);
  const sidecars = new Map(plan.sidecars.map((s) => [s.path, s.text]));
  const query = (ref: string) => queryTexts(indexer, sidecars, ref);
  const violations: string[] = [];
  const stubs = checkStubs(after, indexer, query, violations);
  checkNothingLost(plan.afterBranch, after, indexer, query, violations);
  const calls = checkPairing(before, after, violations);
  checkSummariesSeen(plan.entries, after, violations);
  await checkSecondRun(text, plan.entries, config, violations);
  // Measured as every command measures the context (context/size.ts).
  const from = contextSize(before.afterAgent).chars;
  const to = contextSize(after.afterAgent).chars;
  if (to > from) violations.push(`size: the rendered request grew from ${from} to ${to} chars`);
  return { violations, stubs, recovered: plan.report.recovered.length, withheld: plan.report.withheld !== null, entries: plan.entries.length, calls };
}

/** 6: planning again on the file with the planned entries appended plans nothing. */
async function checkSecondRun(text: string, entries: SessionEntry[], config: PruneConfig, violations: string[]): Promise<void> {
  if (entries.length === 0) return;
  const again = indexSession(parseSessionText("/virtual/s.jsonl", text + entries.map((e) => `${JSON.stringify(e)}\n`).join("")));
  const plan = await planRun(sessionView(again, config), { summarizer: deterministicSummarizer, concurrency: 1, nowMs: NOW_MS + 1000, targetPath: again.path });
  if (plan.entries.length > 0) {
    violations.push(
      `second run: plans ${plan.entries.length} more entries (${plan.entries.map((e) => (e as { customType?: string }).customType ?? e.type).join(", ")})`,
    );
  }
}

/** What `query <ref>` finds: each hit's occurrence key and full output. */
function queryTexts(indexer: ToolCallIndexer, sidecars: Map<string, string>, ref: string): Found[] {
  const lookup = lookupRef(indexer, ref);
  return lookup.hits.map((hit) => {
    const body = recordBody(hit.record, hit.record.spillPath ? [hit.record.spillPath] : [], (p) => {
      const t = sidecars.get(p);
      if (t === undefined) throw new Error(`no sidecar ${p}`);
      return t;
    });
    return { key: hit.key, text: body.text, aliased: hit.aliasOf !== undefined, args: hit.record.args };
  });
}

/** One occurrence `query` returned: its key, its full output, whether it is a dedup alias, the record's arguments. */
interface Found {
  key: string;
  text: string;
  aliased: boolean;
  args: unknown;
}

type Query = (ref: string) => Found[];

/**
 * The output is the result's (exactly; for a dedup alias, equal under the dedup normalization) and,
 * unless it is an alias (which shows its original's call), the arguments are those of the call the
 * result answers in order in its turn (none: `{}`).
 */
function sameResult(found: Found, expected: string, call: ToolCall | undefined): boolean {
  if (found.aliased) return normalizeResult(found.text) === normalizeResult(expected);
  return found.text === expected && JSON.stringify(found.args) === JSON.stringify(call?.arguments ?? {});
}

/** 1: each stub of the stub-replace phase names a ref whose query returns the very result's text. */
function checkStubs(after: Rendered, indexer: ToolCallIndexer, query: Query, violations: string[]): number {
  const handler = after.handler;
  if (!handler) return 0;
  const stubbed = handler.pruned.phases[0].messages;
  const calls = callsInOrder(handler.items.map((i) => i.message));
  let n = 0;
  handler.items.forEach((item, i) => {
    const m = item.message;
    if (m.role !== "toolResult" || stubbed[i] === m) return;
    n++;
    const text = (stubbed[i] as ToolResultMessage).content.map((b) => (b.type === "text" ? b.text : "")).join("");
    const ref = stubRef(text);
    const hits = ref ? query(ref) : [];
    // A dedup alias's stub names its original's ref (the extension's rule): same text, the original's call.
    const alias = indexer.dedupAliasToOriginal.has(resultKeyOf(m));
    const found = hits.length === 1 ? { ...hits[0], aliased: hits[0].aliased || alias } : undefined;
    if (!found || !sameResult(found, resultTextOf(m), calls.get(i))) {
      violations.push(
        `stub: the stub of ${m.toolCallId}@${m.timestamp} (entry ${item.entry.id}) names ${ref}, which returns ${hits.length} output(s) not its own`,
      );
    }
  });
  return n;
}

/** The occurrence key a hit names, with an `id#n` rank taken off. */
function baseKey(key: string): { toolCallId: string; resultTimestamp?: number } {
  const k = parseOccurrenceKey(key);
  return { toolCallId: k.toolCallId.replace(/#\d+$/, ""), resultTimestamp: k.resultTimestamp };
}

/** 2: every result of Pi's projection is sent (raw, stubbed, relocated) or recoverable under its own key. */
function checkNothingLost(branch: SessionEntry[], after: Rendered, indexer: ToolCallIndexer, query: Query, violations: string[]): void {
  const handler = after.handler;
  if (!handler) return;
  const stubbed = handler.pruned.phases[0].messages;
  const sent = new Set<AgentMessage>(handler.pruned.messages);
  const blocks = handler.pruned.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
  const refs = [...indexer.shortRefToKey.keys()];
  const visible = projectBranch(branch).filter((i) => i.message.role !== "system");
  const calls = callsInOrder(visible.map((i) => i.message));
  visible.forEach((item, i) => {
    const m = item.message;
    if (m.role !== "toolResult") return;
    if (sent.has(m) || sent.has(stubbed[i])) return;
    const text = resultTextOf(m);
    if (blocks.some((b) => b.includes(JSON.stringify(`\n${text}\n</protected-output>`).slice(1, -1)))) return;
    const own = `${m.toolCallId}@${m.timestamp}`;
    const found = [own, ...refs].some((ref) =>
      query(ref).some((h) => {
        const k = baseKey(h.key);
        return k.toolCallId === m.toolCallId && k.resultTimestamp === m.timestamp && sameResult(h, text, calls.get(i));
      }),
    );
    if (!found) violations.push(`lost: ${m.toolCallId}@${m.timestamp} (entry ${item.entry.id}) is neither sent nor recoverable by any ref`);
  });
}

/** 5: the refs of the summaries `run` wrote name no result the orphan sweep removes. */
function checkSummariesSeen(entries: SessionEntry[], after: Rendered, violations: string[]): void {
  if (!after.handler) return;
  const swept = new Set(
    contextOccurrences(after.handler.items)
      .results.filter((r) => r.swept)
      .map((r) => r.key),
  );
  for (const e of entries) {
    if (e.type !== "custom_message" || e.customType !== CUSTOM_TYPES.summary) continue;
    for (const ref of (e.details as { toolCallRefs: { shortId: string; toolCallId: string; resultTimestamp?: number }[] }).toolCallRefs) {
      const key = occurrenceKey(ref.toolCallId, ref.resultTimestamp);
      if (swept.has(key)) violations.push(`summary: ${ref.shortId} summarizes ${key}, which the orphan sweep removes`);
    }
  }
}

type CallState = "once" | "synthetic" | "missing" | "several";

/** Per call tag: how the provider's request answers it; plus the results no call matches. */
function answers(request: Message[]): { calls: Map<string, CallState>; unmatched: number } {
  const sent = transformMessages(request as never, MODEL) as unknown as Message[];
  const own = new Set<unknown>(request);
  const calls = new Map<string, CallState>();
  let unmatched = 0;
  for (let i = 0; i < sent.length; i++) {
    const m = sent[i];
    if (m.role === "toolResult") {
      unmatched++; // a result outside any run right after an assistant message
      continue;
    }
    if (m.role !== "assistant") continue;
    const tagged = m.content.filter((b) => b.type === "toolCall") as { id: string; _tag?: string }[];
    const got = new Map<number, { real: number; synthetic: number }>();
    let j = i + 1;
    for (; j < sent.length && sent[j].role === "toolResult"; j++) {
      const r = sent[j] as ToolResultMessage;
      const k = tagged.findIndex((c, ci) => c.id === r.toolCallId && (got.get(ci)?.real ?? 0) + (got.get(ci)?.synthetic ?? 0) === 0);
      if (k < 0) {
        unmatched++;
        continue;
      }
      const g = got.get(k) ?? { real: 0, synthetic: 0 };
      if (own.has(r)) g.real++;
      else g.synthetic++;
      got.set(k, g);
    }
    tagged.forEach((c, ci) => {
      const g = got.get(ci);
      const state: CallState = !g ? "missing" : g.real + g.synthetic > 1 ? "several" : g.real === 1 ? "once" : "synthetic";
      calls.set(c._tag ?? `${i}:${ci}`, state);
    });
    i = j - 1;
  }
  return { calls, unmatched };
}

/** 3: calls answered once before `run` still are; no result after `run` is unmatched. */
function checkPairing(before: Rendered, after: Rendered, violations: string[]): number {
  const was = answers(before.after);
  const now = answers(after.after);
  for (const [tag, state] of now.calls) {
    if (state !== "once" && was.calls.get(tag) === "once") violations.push(`pairing: call ${tag} was answered once before run, now ${state}`);
  }
  if (now.unmatched > 0) violations.push(`pairing: ${now.unmatched} tool result(s) reach the provider matched to no call`);
  return now.calls.size;
}
