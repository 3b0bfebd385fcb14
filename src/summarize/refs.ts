/**
 * From a summarizer answer to the summary message (docs/design.md §6 step 6; docs/design.md
 * "How the Model Re-reads Raw Outputs"): `[[N:toolname]]` labels become inline `` `tN` `` refs when
 * both the number and the tool name match the batch; other labels are removed; fenced code is left
 * alone; a footer lists every ref and how to recover it.
 */
import type { SummaryToolCallRef } from "../entries/types.js";

const LEADING_LABEL = /^(\s*(?:[-*]\s+)?)\[\[(\d+):([^\]\n]*)\]\]\s*/;
const ANY_LABEL = /\[\[\d+:[^\]\n]*\]\]\s*/g;

/**
 * Replace line-leading labels with refs and strip every other label.
 * @param text the summarizer's answer
 * @param refs refs of the batch's calls, in label order (label N ↔ refs[N-1])
 * @param toolNames tool names of the batch's calls, in label order
 */
export function substituteInlineRefs(text: string, refs: SummaryToolCallRef[], toolNames: string[]): string {
  return outsideFences(text, (line) => {
    const replaced = line.replace(LEADING_LABEL, (_m, prefix: string, n: string, name: string) => {
      const i = Number(n) - 1;
      const expected = toolNames[i];
      if (refs[i] && expected !== undefined && name.trim().toLowerCase() === expected.trim().toLowerCase()) {
        return `${prefix}\`${refs[i].shortId}\` `;
      }
      return prefix;
    });
    return replaced.replace(ANY_LABEL, "");
  });
}

/** `text` with `edit` applied to every line outside fenced code (fence lines and fenced lines kept). */
function outsideFences(text: string, edit: (line: string) => string): string {
  let inFence = false;
  return text
    .split("\n")
    .map((line) => {
      if (line.trimStart().startsWith("```")) {
        inFence = !inFence;
        return line;
      }
      return inFence ? line : edit(line);
    })
    .join("\n");
}

/** The footer appended to every summary: the refs and how to get the full outputs back. */
export function summaryFooter(refs: SummaryToolCallRef[]): string {
  const list = refs.map((r) => `\`${r.shortId}\``).join(", ");
  return `\n\n---\nPruned tool outputs: ${list}\nFull original outputs: call \`context_tree_query\` with these refs (or run \`condense query <ref>\`).`;
}

/** Answer → summary message text: refs substituted, footer appended. */
export function composeSummary(answer: string, refs: SummaryToolCallRef[], toolNames: string[]): string {
  return substituteInlineRefs(answer, refs, toolNames) + summaryFooter(refs);
}

/** Where a summary's footer starts (see {@link summaryFooter}). */
const FOOTER_START = "\n\n---\nPruned tool outputs: ";

/**
 * The inverse of {@link composeSummary}: a stored summary back as the answer it was composed from —
 * footer removed, each line-leading ref `` `tN` `` (outside fenced code) turned back into its label
 * `[[N:toolname]]`. Composing the result with the same refs gives the stored text again; with other
 * refs, the same summary naming them. Used to reuse summaries already in a session (issue 16).
 * @param refs the summary's refs, in label order; @param toolNames its tool names, in label order
 */
export function answerFromSummary(text: string, refs: SummaryToolCallRef[], toolNames: string[]): string {
  const footer = text.lastIndexOf(FOOTER_START);
  const body = footer >= 0 ? text.slice(0, footer) : text;
  const labelOf = new Map(refs.flatMap((r, i) => (toolNames[i] !== undefined ? [[r.shortId, `[[${i + 1}:${toolNames[i]}]]`] as const] : [])));
  return outsideFences(body, (line) =>
    line.replace(LEADING_REF, (m, prefix: string, ref: string) => {
      const label = labelOf.get(ref);
      return label ? `${prefix}${label} ` : m;
    }),
  );
}

const LEADING_REF = /^(\s*(?:[-*]\s+)?)`([^`\s]+)` /;
