/**
 * Render diagnostics (docs/design.md "Diagnostics"): degradations found while rendering — an
 * unresolvable chain range, a range whose ids drifted, swept orphan results, a chain with nothing
 * to back-fill — kept out of the model's context and recorded as `context-prune-diagnostic`
 * entries instead. Each is deduplicated by (kind, dedupKey), so a permanently degraded condition is
 * reported once, not once per render.
 */
import { readPruneEntry } from "../entries/read.js";
import { CUSTOM_TYPES, type DiagnosticData } from "../entries/types.js";
import type { SessionEntry } from "../session/types.js";
import type { RenderDiagnostic } from "./types.js";

/** The first diagnostic per (kind, dedupKey), in the order found. */
export function dedupDiagnostics(diagnostics: RenderDiagnostic[]): RenderDiagnostic[] {
  const seen = new Set<string>();
  const out: RenderDiagnostic[] = [];
  for (const d of diagnostics) {
    const key = `${d.kind}\0${d.dedupKey}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}

/** The `{kind, detail}` of every `context-prune-diagnostic` entry on a branch, in branch order. */
export function recordedDiagnostics(branch: SessionEntry[]): DiagnosticData[] {
  const out: DiagnosticData[] = [];
  for (const entry of branch) {
    // Only diagnostic entries are read (the reader validates every kind it is given).
    if (entry.type !== "custom" || entry.customType !== CUSTOM_TYPES.diagnostic) continue;
    const read = readPruneEntry(entry);
    if (read?.kind === "diagnostic") out.push(read.data);
  }
  return out;
}

/** `kind\0detail` of every diagnostic the branch records: what "already recorded" compares. */
export function recordedDiagnosticKeys(branch: SessionEntry[]): Set<string> {
  return new Set(recordedDiagnostics(branch).map((d) => `${d.kind}\0${d.detail}`));
}

/**
 * The diagnostics of a render that the branch does not record yet, as entry data. An entry holds
 * only `{kind, detail}`, so "recorded" means a diagnostic entry with the same kind and detail (the
 * detail is derived from the same facts as the dedup key, so it is stable across runs).
 */
export function unrecordedDiagnostics(branch: SessionEntry[], diagnostics: RenderDiagnostic[]): DiagnosticData[] {
  const recorded = recordedDiagnosticKeys(branch);
  const out: DiagnosticData[] = [];
  for (const d of dedupDiagnostics(diagnostics)) {
    const key = `${d.kind}\0${d.detail}`;
    if (recorded.has(key)) continue;
    recorded.add(key);
    out.push({ kind: d.kind, detail: d.detail });
  }
  return out;
}
