/**
 * The table `run --estimate` prints: per session the requests a model would get (batch summaries,
 * chain fusions), those the summary cache answers, the estimated tokens and the expected cost;
 * totals for several sessions; what the figures mean, below it.
 */
import type { RunFileResult } from "../pipeline/run.js";
import { emptyEstimate, type Estimate } from "../summarize/estimate.js";
import { type Output, sessionLabels, wrapWords } from "./output.js";
import { n, shortCount } from "./format.js";
import type { Column } from "./table.js";

const WIDE: Column[] = [
  { head: "session", fit: true, minWidth: 40 },
  ...["batches", "fusions", "cached", "~input tokens", "~output tokens", "~cost"].map((head): Column => ({ head, align: "right" })),
];

/** Below 100 columns, or where the wide table leaves the session label too little room. */
const COMPACT: Column[] = [
  { head: "session", fit: true, minWidth: 12 },
  ...["requests", "cached", "~tokens", "~cost"].map((head): Column => ({ head, align: "right" })),
];

/** `--estimate`: per session the requests a model would get, their tokens and expected cost; totals. */
export function formatEstimate(results: Pick<RunFileResult, "session" | "label" | "estimate">[], out: Output): string {
  // Sessions labelled as every other table labels them (short id, date, name or first prompt).
  const names = sessionLabels(results);
  const estimates = results.map((r) => r.estimate ?? null);
  type Figures = Pick<Estimate, "batches" | "fusions" | "cached" | "inputTokens" | "outputTokens" | "cost">;
  const cost = (e: Figures) => `$${e.cost.toFixed(4)}`;
  const wideRow = (name: string, e: Figures) => [name, n(e.batches), n(e.fusions), n(e.cached), n(e.inputTokens), n(e.outputTokens), cost(e)];
  // Narrow terminals: requests (batches + fusions) and tokens (input/output) in one column each.
  const compactRow = (name: string, e: Figures) => [
    name,
    n(e.batches + e.fusions),
    n(e.cached),
    `${shortCount(e.inputTokens)}/${shortCount(e.outputTokens)}`,
    cost(e),
  ];
  const figures: [string, Figures][] = estimates.map((e, i) => [names[i], e ?? emptyEstimate(null)]);
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
    figures.push([out.c.bold(`total (${results.length})`), total]);
  }
  const table = out.fitted([
    { columns: WIDE, rows: figures.map(([name, e]) => wideRow(name, e)) },
    { columns: COMPACT, rows: figures.map(([name, e]) => compactRow(name, e)) },
  ]);
  const models = [...new Set(estimates.map((e) => e?.model).filter((m): m is string => !!m))];
  const unpriced = [...new Set(estimates.filter((e) => e?.model && !e.priced).map((e) => e?.model))];
  const notes = [
    `estimate: no model was called · ${models.length > 0 ? `model ${models.join(", ")}` : "deterministic summarizer: no model, no cost"} · ` +
      "input = ceil(chars / 4) of each request · output ≈ the deterministic summary's size · cached = answered by the summary cache, free",
  ];
  if (unpriced.length > 0) notes.push(`pi-ai knows no price for ${unpriced.join(", ")}: cost shown as $0`);
  if (table.layout === 1) notes.push("requests = batch summaries + chain fusions · ~tokens = input/output");
  return [table.text, ...notes.map((l) => out.c.dim(wrapWords(l, out.width)))].join("\n");
}
