/**
 * How much of what mattered in the pruned outputs the model still sees (docs/design.md "Summary
 * quality"): of the file paths, error lines and exit codes in the tool outputs a run pruned, the
 * share that still appears somewhere in the context Pi sends after it (a stub, a summary, a
 * compressed-chain block — or anywhere else). The same figure for plain observation masking (each
 * pruned output replaced by a stub that says nothing, the rest kept) is the baseline.
 *
 * Facts are counted once per session (a path read ten times is one fact). An error line counts by
 * its first {@link ERROR_PREFIX} characters (cut at a word boundary), whitespace collapsed; an exit
 * code as `exit N`. Texts are compared after control characters are stripped.
 */
import { textOf } from "../context/projection.js";
import { contextSize, countedParts } from "../context/size.js";
import { resultKeyOf } from "../context/vocabulary.js";
import type { AgentMessage, ToolResultMessage } from "../session/types.js";
import { exitStatuses, failureReason, filePaths, isErrorLine, isFileRead } from "../summarize/facts.js";
import { cropAtWord, stripControl } from "../util/text.js";

/** Characters of an error line that must appear verbatim for it to count as kept. */
export const ERROR_PREFIX = 60;

/** The facts of one output. */
export interface Facts {
  paths: Set<string>;
  errors: Set<string>;
  exits: Set<string>;
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * File paths, error lines and exit codes of one tool output (`summarize/facts.ts` says what each
 * is). The contents of a file read (a successful `read`) hold code and prose, not results: they
 * contribute nothing — the path read is in the call. A failed call's reason counts as error lines.
 */
export function outputFacts(output: { toolName: string; text: string; isError?: boolean }, into: Facts = emptyFacts()): Facts {
  const text = stripControl(output.text);
  const addError = (line: string) => {
    const t = squash(line);
    if (t.length >= 4) into.errors.add(cropAtWord(t, ERROR_PREFIX).replace(/…$/, ""));
  };
  if (output.isError) for (const line of failureReason(text)) addError(line);
  if (isFileRead(output.toolName) && !output.isError) return into;
  for (const path of filePaths(text)) into.paths.add(path);
  for (const line of text.split("\n")) if (isErrorLine(line)) addError(line);
  for (const code of exitStatuses(text)) into.exits.add(`exit ${code}`);
  return into;
}

/** No facts yet. */
export function emptyFacts(): Facts {
  return { paths: new Set(), errors: new Set(), exits: new Set() };
}

/** Everything of a context a model reads, as one text (whitespace collapsed, control characters stripped). */
export function contextText(messages: readonly AgentMessage[]): string {
  return squash(stripControl(messages.map((m) => countedParts(m).texts.join("\n")).join("\n")));
}

/** Tool results of `before` whose text is not in `after` as it was (stubbed, summarized or dropped). */
export function prunedOutputs(before: readonly AgentMessage[], after: readonly AgentMessage[]): ToolResultMessage[] {
  const kept = new Map<string, string>();
  for (const m of after) if (m.role === "toolResult") kept.set(resultKeyOf(m), textOf(m.content));
  return before.filter((m): m is ToolResultMessage => m.role === "toolResult" && kept.get(resultKeyOf(m)) !== textOf(m.content));
}

/** How many facts there were, and how many a context kept. */
export interface Kept {
  facts: number;
  kept: number;
  /** `kept / facts` (1 when there is none). */
  share: number;
  byKind: Record<keyof Facts, { facts: number; kept: number }>;
}

/** Which facts appear in a context's text (whitespace collapsed on both sides). */
export function keptFacts(facts: Facts, text: string): Kept {
  const byKind = { paths: { facts: 0, kept: 0 }, errors: { facts: 0, kept: 0 }, exits: { facts: 0, kept: 0 } };
  for (const kind of ["paths", "errors", "exits"] as const) {
    for (const fact of facts[kind]) {
      byKind[kind].facts++;
      if (text.includes(squash(fact))) byKind[kind].kept++;
    }
  }
  const total = byKind.paths.facts + byKind.errors.facts + byKind.exits.facts;
  const kept = byKind.paths.kept + byKind.errors.kept + byKind.exits.kept;
  return { facts: total, kept, share: total === 0 ? 1 : kept / total, byKind };
}

/** Plain observation masking: every pruned output's content replaced by a stub naming nothing. */
export function maskOutputs(before: readonly AgentMessage[], pruned: readonly ToolResultMessage[]): AgentMessage[] {
  const masked = new Set(pruned);
  return before.map((m) =>
    masked.has(m as ToolResultMessage) ? { ...(m as ToolResultMessage), content: [{ type: "text" as const, text: "[output pruned]" }] } : m,
  );
}

/** The quality of a run against plain masking of the same outputs. */
export interface QualityReport {
  /** Tool outputs the run pruned. */
  pruned: number;
  condense: Kept & { tokensBefore: number; tokensAfter: number };
  masking: Kept & { tokensAfter: number };
}

/**
 * Compare what a run keeps of the pruned outputs' facts with plain masking.
 * @param before the context Pi sends before the run (agent messages)
 * @param after the context Pi sends after it
 */
export function pruneQuality(before: readonly AgentMessage[], after: readonly AgentMessage[]): QualityReport {
  const pruned = prunedOutputs(before, after);
  const facts = emptyFacts();
  for (const m of pruned) outputFacts({ toolName: m.toolName, text: textOf(m.content), isError: m.isError }, facts);
  const masked = maskOutputs(before, pruned);
  return {
    pruned: pruned.length,
    condense: { ...keptFacts(facts, contextText(after)), tokensBefore: contextSize(before).tokens, tokensAfter: contextSize(after).tokens },
    masking: { ...keptFacts(facts, contextText(masked)), tokensAfter: contextSize(masked).tokens },
  };
}
