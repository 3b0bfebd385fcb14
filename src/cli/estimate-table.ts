/**
 * The table `run --estimate` prints: per session the requests a model would get (batch summaries,
 * chain fusions), those the summary cache answers, the estimated tokens and the expected cost;
 * totals for several sessions; what the figures mean, below it.
 */
import type { RunFileResult } from "../pipeline/run.js";
import { emptyEstimate, type Estimate } from "../summarize/estimate.js";
import { type Output, sessionLabels } from "./output.js";
import type { Column } from "./table.js";

/** `--estimate`: per session the requests a model would get, their tokens and expected cost; totals. */
export function formatEstimate(results: Pick<RunFileResult, "session" | "label" | "estimate">[], out: Output): string {
  const n = (x: number) => x.toLocaleString("en-US");
  // Sessions labelled as every other table labels them (short id, date, name or first prompt).
  const names = sessionLabels(results);
  const estimates = results.map((r) => r.estimate ?? null);
  const row = (name: string, e: Pick<Estimate, "batches" | "fusions" | "cached" | "inputTokens" | "outputTokens" | "cost">) => [
    name,
    n(e.batches),
    n(e.fusions),
    n(e.cached),
    n(e.inputTokens),
    n(e.outputTokens),
    `$${e.cost.toFixed(4)}`,
  ];
  const rows = estimates.map((e, i) => row(names[i], e ?? emptyEstimate(null)));
  if (results.length > 1) {
    const sum = (f: (e: Estimate) => number) => estimates.reduce((t, e) => t + (e ? f(e) : 0), 0);
    const total = {
      batches: sum((e) => e.batches),
      fusions: sum((e) => e.fusions),
      cached: sum((e) => e.cached),
      inputTokens: sum((e) => e.inputTokens),
      outputTokens: sum((e) => e.outputTokens),
      cost: sum((e) => e.cost),
    };
    rows.push(row(out.c.bold(`total (${results.length})`), total));
  }
  const columns: Column[] = [
    { head: "session", fit: true, minWidth: 12 },
    ...["batches", "fusions", "cached", "~input tokens", "~output tokens", "~cost"].map((head): Column => ({ head, align: "right" })),
  ];
  const table = out.fitted([{ columns, rows }]).text;
  const models = [...new Set(estimates.map((e) => e?.model).filter((m): m is string => !!m))];
  const unpriced = [...new Set(estimates.filter((e) => e?.model && !e.priced).map((e) => e?.model))];
  const notes = [
    `estimate: no model was called · ${models.length > 0 ? `model ${models.join(", ")}` : "deterministic summarizer: no model, no cost"} · ` +
      "input = ceil(chars / 4) of each request · output ≈ the deterministic summary's size · cached = answered by the summary cache, free",
  ];
  if (unpriced.length > 0) notes.push(`pi-ai knows no price for ${unpriced.join(", ")}: cost shown as $0`);
  return [table, ...notes.map((l) => out.c.dim(l))].join("\n");
}
