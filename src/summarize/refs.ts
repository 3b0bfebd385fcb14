/**
 * From a summarizer answer to the summary message (docs/design.md §6 step 6; docs/design.md
 * "How the Model Re-reads Raw Outputs"): `[[N:toolname]]` labels become inline `` `tN` `` refs when
 * both the number and the tool name match the batch; other labels are removed; fenced code is left
 * alone; a footer lists the refs the text does not name, and once per run a summary says how to
 * recover a pruned output.
 */
import { RECOVERY_HINT } from "../context/vocabulary.js";
import type { SummaryToolCallRef } from "../entries/types.js";
import { stripControl } from "../util/text.js";

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

/** What separates a summary's bullets from its footer (fusion and chain bodies leave the footer out). */
export const FOOTER_SEPARATOR = "\n\n---\n";

/**
 * The footer of a summary: the refs its text does not name inline (a model's answer may leave a
 * label out), or nothing — every ref is then on its bullet. How to recover a pruned output is said
 * once per run ({@link withRecoveryHint}), not in every summary.
 */
export function summaryFooter(text: string, refs: SummaryToolCallRef[]): string {
  const missing = refs.filter((r) => !text.includes(`\`${r.shortId}\``));
  if (missing.length === 0) return "";
  return `${FOOTER_SEPARATOR}Also pruned here: ${missing.map((r) => `\`${r.shortId}\``).join(", ")}.`;
}

/** Answer → summary message text: control characters stripped, refs substituted, the refs not named inline in a footer. */
export function composeSummary(answer: string, refs: SummaryToolCallRef[], toolNames: string[]): string {
  const text = substituteInlineRefs(stripControl(answer), refs, toolNames).trimEnd();
  return text + summaryFooter(text, refs);
}

/** A summary (or chain body) with the recovery hint at the end of its footer. */
export function withRecoveryHint(text: string): string {
  return `${text}${text.includes(FOOTER_SEPARATOR) ? "\n" : FOOTER_SEPARATOR}${RECOVERY_HINT}`;
}

/** The text without the recovery hint {@link withRecoveryHint} added (fusion keeps it out of chain bodies). */
export function withoutRecoveryHint(text: string): string {
  return text.replace(`${FOOTER_SEPARATOR}${RECOVERY_HINT}`, "").replace(`\n${RECOVERY_HINT}`, "");
}

/** The footer {@link summaryFooter} writes, at the end of a summary. */
const TRAILING_FOOTER = /\n\n---\nAlso pruned here: `[^`\n]+`(?:, `[^`\n]+`)*\.$/;

/**
 * The inverse of {@link composeSummary}: a stored summary back as the answer it was composed from —
 * the recovery hint and the footer removed, each line-leading ref `` `tN` `` (outside fenced code)
 * turned back into its label `[[N:toolname]]`. Composing the result with the same refs gives the
 * stored text again (without the hint, which a run adds once itself); with other refs, the same
 * summary naming them. Used to reuse summaries already in a session (issue 16).
 * @param refs the summary's refs, in label order; @param toolNames its tool names, in label order
 */
export function answerFromSummary(text: string, refs: SummaryToolCallRef[], toolNames: string[]): string {
  const body = withoutRecoveryHint(text).replace(TRAILING_FOOTER, "");
  const labelOf = new Map(refs.flatMap((r, i) => (toolNames[i] !== undefined ? [[r.shortId, `[[${i + 1}:${toolNames[i]}]]`] as const] : [])));
  return outsideFences(body, (line) =>
    line.replace(LEADING_REF, (m, prefix: string, ref: string) => {
      const label = labelOf.get(ref);
      return label ? `${prefix}${label} ` : m;
    }),
  );
}

const LEADING_REF = /^(\s*(?:[-*]\s+)?)`([^`\s]+)` /;
