/**
 * What the summarizer model is asked (docs/design.md §6 step 6; docs/design.md "Range summary
 * fusion"). Our own words. The instructions go in the system prompt, identical for every call so
 * providers can cache them; the batch goes in the user message.
 *
 * A batch is serialized call by call, each call opened by its `[[N:toolname]]` label (N counts the
 * calls of the batch from 1), its arguments as indented JSON and its result. Long arguments and
 * results are shown as head and tail around one elision line, `[… N characters omitted …]`, which
 * the instructions explain.
 */
import { groupDigits, stripControl } from "../util/text.js";
import { withoutRecoveryHint } from "./refs.js";
import type { SummaryBatch, SummaryCall } from "./types.js";

/** How much of a long text the model sees, in UTF-16 code units. */
export interface CropLimits {
  head: number;
  tail: number;
}

/** Results: 2,000 characters from the start and 1,000 from the end. */
export const RESULT_CROP: CropLimits = { head: 2000, tail: 1000 };
/** Arguments (as indented JSON) and the assistant's prose: 1,500 + 500. */
export const ARGS_CROP: CropLimits = { head: 1500, tail: 500 };

/** The elision line put where characters were left out. */
export function elisionMarker(omitted: number): string {
  return `[… ${groupDigits(omitted)} characters omitted …]`;
}

/** Move `i` off the low half of a surrogate pair so a cut never splits a character. */
function safeCut(text: string, i: number): number {
  if (i > 0 && i < text.length) {
    const code = text.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff) return i - 1;
  }
  return i;
}

/** Cropping saves less than the marker costs below this many characters, so shorter middles stay. */
const MIN_OMITTED = 64;

/**
 * `text` unchanged when it fits in `head + tail` characters (plus a 64-character allowance, so a
 * crop always saves more than its marker costs); otherwise its first `head` and last `tail`
 * characters around an {@link elisionMarker} line (surrogate pairs are never split).
 */
export function cropMiddle(text: string, limits: CropLimits): string {
  if (text.length < limits.head + limits.tail + MIN_OMITTED) return text;
  const headEnd = safeCut(text, limits.head);
  const tailStart = safeCut(text, text.length - limits.tail);
  const omitted = tailStart - headEnd;
  return `${text.slice(0, headEnd)}\n${elisionMarker(omitted)}\n${text.slice(tailStart)}`;
}

/** Instructions for one batch of tool calls. */
export const BATCH_INSTRUCTIONS = `You condense the record of tool calls that an AI coding agent made, so that the agent can go on working with a much smaller context. The full outputs stay on disk and the agent can fetch them again, so keep only what it is likely to need later.

The user message holds one batch of calls inside <tool-calls>. Each call starts with a label such as [[2:bash]]: the number of the call in this batch and the name of the tool. After the label come the call's arguments (JSON) and its result.

For every call worth remembering, write one to three bullets:
- Start the first bullet of each call with its label, copied exactly, as the first thing on the line: "- [[2:bash]] ran the test suite ...". Do not put the label in bold, backticks or quotes, do not number the bullets, and never change a label's number or name or make up a label.
- Say what the call did and what came of it. Copy file paths, identifiers, function and type names, commands, versions, exit codes and error messages exactly as written.
- Keep any finding the agent will probably rely on later: a value it looked up, a cause it found, a decision it reached.
Leave out calls that produced nothing worth keeping, together with their labels.

Long arguments and results are shown only in part: their beginning and their end, with a line such as "[… 12,345 characters omitted …]" where the middle was left out. Do not guess what the missing part said; if it may matter, say that the output was long and was cut here.

Answer with the bullets only: no title, no introduction, no closing remarks.`;

/** Instructions for fusing the per-batch summaries of one closed chain. */
export const FUSION_INSTRUCTIONS = `You merge summaries into one. While an AI coding agent worked on a single request, each batch of its tool calls was summarized separately; the user message holds those summaries, in order, inside <step-summaries>. Write one summary of the whole piece of work for the agent to keep in its context.

- Merge what repeats; keep what was done, what was found and what was decided.
- Copy file paths, identifiers, commands, versions and error messages exactly as written.
- Keep references written like \`t12\` or \`b3\` exactly as they are, next to what they refer to: the agent uses them to fetch the full outputs.
- Write a short paragraph or a few grouped bullets, with no title, introduction or closing remarks.`;

function argumentsJson(args: unknown): string {
  if (args === undefined) return "{}";
  try {
    return JSON.stringify(args, null, 2) ?? String(args);
  } catch {
    return String(args);
  }
}

/** One call as the model sees it. @param label 1-based number of the call in its batch */
export function serializeCall(call: SummaryCall, label: number): string {
  const status = call.isError ? "error" : "ok";
  const size = `${groupDigits(call.resultText.length)} characters`;
  return [
    `[[${label}:${call.toolName}]] ${call.toolName}`,
    "arguments:",
    cropMiddle(argumentsJson(call.args), ARGS_CROP),
    `result (${status}, ${size}):`,
    // Terminal escape sequences and control characters carry nothing a summary should copy.
    call.resultText === "" ? "(empty)" : cropMiddle(stripControl(call.resultText), RESULT_CROP),
  ].join("\n");
}

/** The user message for a batch: the assistant's prose (when any), then the labelled calls. */
export function batchMessage(batch: SummaryBatch): string {
  const parts: string[] = [];
  const prose = batch.assistantText.trim();
  if (prose !== "") parts.push(`The agent wrote before making these calls:\n${cropMiddle(prose, ARGS_CROP)}\n`);
  const calls = batch.calls.map((call, i) => serializeCall(call, i + 1)).join("\n\n---\n\n");
  parts.push(`<tool-calls>\n${calls}\n</tool-calls>`);
  return parts.join("\n");
}

/** The user message for range fusion: the per-batch bodies, in order, without the recovery hint (said once per run). */
export function fusionMessage(bodies: string[]): string {
  return `<step-summaries>\n${bodies.map(withoutRecoveryHint).join("\n\n")}\n</step-summaries>`;
}

/** A request as sent: the system prompt and the user message. */
export interface SummaryRequest {
  system: string;
  user: string;
}

/** The request for one batch. */
export function batchRequest(batch: SummaryBatch): SummaryRequest {
  return { system: BATCH_INSTRUCTIONS, user: batchMessage(batch) };
}

/** The request fusing one chain's per-batch summaries. */
export function fusionRequest(bodies: string[]): SummaryRequest {
  return { system: FUSION_INSTRUCTIONS, user: fusionMessage(bodies) };
}
