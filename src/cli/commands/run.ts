/**
 * `condense [run] <session...>`: the main job (docs/design.md §2, §5, §6). Per session: plan in
 * memory, then write sidecars atomically, then append the entries in one locked write — or, with
 * `--output FILE`, write the original bytes plus the new entries to FILE. `--dry-run` writes nothing.
 */
import { Option, type Command } from "commander";
import { loadConfig } from "../../config/config.js";
import { runSession, type RunFileResult, type RunHooks, type RunSessionOptions } from "../../pipeline/run.js";
import type { TargetChoice } from "../../pipeline/target.js";
import type { FlushProgress } from "../../prune/flush.js";
import { checkOutputPath } from "../../session/commit.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { summarizerKind } from "../../summarize/select.js";
import { defaultJobs, type FileOutcome, forEachSession, interruptOnSigint, positiveInt, splitOutcomes } from "../batch.js";
import { type CommonOptions, type ConfigFlags, configSources, type ExitState, withCommonOptions, withConfigOptions } from "../options.js";
import { extensionOffWarning } from "../extension-status.js";
import { displayNames, Output } from "../output.js";

interface RunOptions extends CommonOptions, ConfigFlags {
  dryRun?: boolean;
  summarizer?: "deterministic" | "llm";
  model?: string;
  fallbackModel?: string;
  concurrency?: string;
  jobs?: string;
  force?: boolean;
  migrate?: boolean;
  output?: string;
  target: TargetChoice;
}

export function registerRun(program: Command, exit: ExitState): void {
  const cmd = program
    .command("run", { isDefault: true })
    .description("prune sessions: summarize unpruned tool batches and append the pruning entries")
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .option("--dry-run", "compute everything, write nothing (not even sidecars)")
    .addOption(new Option("--summarizer <kind>", "deterministic (no model) or llm").choices(["deterministic", "llm"]))
    .option("--model <provider/id>", "summarizer model (implies --summarizer llm)")
    .option("--fallback-model <provider/id>", "model for batches the summarizer model fails on transiently (default: the session's model)")
    .addOption(new Option("--thinking <level>", "summarizer thinking level").choices(["off", "minimal", "low", "medium", "high", "xhigh"]))
    .option("--concurrency <n>", "parallel summarizer calls", "4")
    .option("--jobs <n>", "sessions processed at once (default: number of cores)");
  withConfigOptions(cmd)
    .option("--no-chain", "skip chain compression")
    .option("--migrate", "rewrite v1/v2 sessions as v3 first (after a backup), as Pi does on open")
    .option("--force", "overwrite an existing --output file or migration backup; write even if the last tool calls look still running")
    .option("--output <file>", "write the original bytes plus the new entries to FILE; the input stays untouched")
    .addOption(targetOption())
    .addHelpText(
      "after",
      "\nExamples:\n  condense session.jsonl\n  condense run session.jsonl --target pi --output condensed.jsonl\n  condense ~/.pi/agent/sessions/ --dry-run --json",
    );
  withCommonOptions(cmd).action(async (args: string[], options: RunOptions) => {
    const out = new Output(options);
    const started = Date.now();
    const config = loadConfig(configSources(options));
    const concurrency = positiveInt("--concurrency", options.concurrency, 4);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const files = await resolveSessionArgs(args);
    if (options.output !== undefined) await checkOutputPath(options.output, files);
    // The extension's entries alone shrink Pi's context only with the extension switched on.
    if (!options.quiet && options.target === "extension") {
      const off = await extensionOffWarning(files, "run");
      if (off) out.warn(off);
    }
    if (summarizerKind({ kind: options.summarizer, model: options.model }, config) === "deterministic" && (options.thinking || options.fallbackModel)) {
      out.warn(`${options.thinking ? "--thinking" : "--fallback-model"} has no effect with the deterministic summarizer (name a model with --model)`);
    }
    const interrupt = interruptOnSigint();
    const runOptions: RunSessionOptions = {
      config,
      summarizer: { kind: options.summarizer, model: options.model, fallbackModel: options.fallbackModel },
      concurrency,
      dryRun: !!options.dryRun,
      migrate: !!options.migrate,
      force: !!options.force,
      output: options.output,
      target: options.target,
      signal: interrupt.signal,
    };
    let outcomes: FileOutcome<RunFileResult>[];
    try {
      outcomes = await forEachSession(files, jobs, out, "condensing", (path) => runSession(path, runOptions, runHooks(out, files.length === 1)));
    } finally {
      interrupt.release();
    }
    const { results, failures } = splitOutcomes(outcomes);
    if (failures.length > 0) {
      // A single unusable input is a usage error (2); with several files, any failure is exit 1.
      exit.code = files.length === 1 ? failures[0].exitCode : 1;
    }
    if (interrupt.signal.aborted) exit.code = 130;
    if (options.json) {
      out.printJson({ sessions: results, failures: failures.map(({ session, error }) => ({ session, error })), wallMs: Date.now() - started });
      return;
    }
    for (const f of failures) out.error(f.error);
    if (results.length > 0) out.print(formatReport(results, out));
    for (const r of results) {
      if (r.backup) out.info(`${r.session}: migrated from v${r.migratedFrom} to v3; the original is at ${r.backup}`);
      if (r.written && r.written !== r.session) out.info(`wrote ${r.written}`);
    }
  });
}

/** `--target`: whom run writes for (pipeline/target.ts). */
function targetOption(): Option {
  return new Option(
    "--target <target>",
    "pi: also write Pi's own context edits, so stock Pi sends the pruned context; extension: only the pi-condense extension's entries; auto: pi unless Pi's settings show the extension installed and switched on",
  )
    .choices(["auto", "pi", "extension"])
    .default("auto");
}

/** Warnings, summarizer notices and (for a single session on a TTY) a progress spinner. */
function runHooks(out: Output, showProgress: boolean): RunHooks {
  let spinner: ReturnType<Output["spinner"]> = null;
  return {
    warn: (message) => out.warn(message),
    notice: (message) => {
      spinner?.clear();
      out.warn(message);
      spinner?.render();
    },
    progress: (name, local) => {
      if (!showProgress || local) return null;
      const shown = out.spinner(`summarizing with ${name}`);
      spinner = shown;
      if (!shown) return null;
      return {
        update: (p) => {
          shown.text = progressLine(name, p);
        },
        stop: () => {
          shown.stop();
          spinner = null;
        },
      };
    },
  };
}

/** `summarizing with p/m: 12/96 batches · 1 failed · 45.2k tokens · $0.0123` */
export function progressLine(model: string, p: FlushProgress): string {
  const tokens = p.usage.input + p.usage.output;
  const shown = tokens >= 1000 ? `${(tokens / 1000).toFixed(1)}k` : String(tokens);
  const parts = [`${p.done}/${p.total} batches`];
  if (p.failed > 0) parts.push(`${p.failed} failed`);
  parts.push(`${shown} tokens`);
  if (p.usage.cost > 0) parts.push(`$${p.usage.cost.toFixed(4)}`);
  return `summarizing with ${model}: ${parts.join(" · ")}`;
}

function pct(before: number, after: number): string {
  if (before === 0) return "0%";
  const p = Math.round((100 * (after - before)) / before);
  return p > 0 ? `+${p}%` : `${p}%`;
}

/** The context figure of the target a run used: stock Pi's for `pi`, the extension's for `extension`. */
function shownContext(r: Pick<RunFileResult, "context" | "target">): RunFileResult["context"]["piOnly"] {
  return r.target.used === "pi" ? r.context.piOnly : r.context;
}

/** `stock Pi (--target pi): 48 context edits (30 stubs, 2 assistant, 1 chain block, 15 omitted)` and why that target. */
function targetLines(results: RunFileResult[], out: Output): string[] {
  const why = (r: RunFileResult) =>
    `${r.target.used === "pi" ? "written for stock Pi" : "written for the pi-condense extension"} (target ${r.target.used}: ${r.target.reason})`;
  const edits = (r: RunFileResult) => {
    const e = r.contextEdits;
    if (!e) return "";
    const kept = e.keptForeign > 0 ? `; ${e.keptForeign} left as edited by someone else` : "";
    const cannot = e.unrepresentable > 0 ? `; ${e.unrepresentable} changes no context edit can make` : "";
    return ` · ${e.written} context edits (${e.stubs} stubs, ${e.assistants} assistant, ${e.carriers} chain blocks, ${e.omitted} omitted)${kept}${cannot}`;
  };
  const reasons = new Set(results.map(why));
  if (reasons.size === 1 && results.length > 1)
    return [out.c.dim(`all sessions ${[...reasons][0]}`), ...results.filter((r) => r.contextEdits?.written).map((r) => `${r.session}${edits(r)}`)];
  return results.map((r) => `${r.session}: ${why(r)}${edits(r)}`);
}

/** The totals row of the report (several sessions). */
function totalsRow(
  results: RunFileResult[],
  out: Output,
  row: (r: Pick<RunFileResult, "batches" | "calls" | "chains" | "context" | "target">, name: string, written: string) => string[],
): string[] {
  const sum = (f: (r: RunFileResult) => number) => results.reduce((n, r) => n + f(r), 0);
  const idle = results.filter((r) => !r.dryRun && !r.written).length;
  const total = {
    batches: {
      captured: sum((r) => r.batches.captured),
      summarized: sum((r) => r.batches.summarized),
      skippedTrivial: sum((r) => r.batches.skippedTrivial),
      skippedDeduped: sum((r) => r.batches.skippedDeduped),
      skippedOversized: sum((r) => r.batches.skippedOversized),
      failed: sum((r) => r.batches.failed),
    },
    calls: { spilled: sum((r) => r.calls.spilled), deduped: 0, protected: 0, summarized: 0, unanswered: 0, swept: 0, ambiguous: 0, keptForErrorPurge: 0 },
    chains: { compressed: sum((r) => r.chains?.compressed ?? 0), rangesSummarized: 0, backfilledCalls: 0, waiting: 0 },
    // Each session's figure for the target it used.
    context: {
      before: { chars: 0, tokens: sum((r) => shownContext(r).before.tokens) },
      after: { chars: 0, tokens: sum((r) => shownContext(r).after.tokens) },
      piOnly: { before: { chars: 0, tokens: 0 }, after: { chars: 0, tokens: 0 } },
    },
    target: { used: "extension" as const, reason: "" },
  };
  const entries = sum((r) => r.entriesAppended);
  const written = results.every((r) => r.dryRun) ? `would add ${entries}` : `+${entries}`;
  return row(total, out.c.bold(`total (${results.length}${idle ? `, ${idle} with nothing to do` : ""})`), written).map(String);
}

const LISTED_RECOVERIES = 5;

/**
 * What a run left as it was, and why: summaries withheld because the context would have grown,
 * results the render removes that were indexed for recovery (with the ref to query), calls left
 * raw for a shared occurrence key or for error purge.
 */
function keptLines(r: RunFileResult, out: Output): string[] {
  const lines: string[] = [];
  if (r.withheld) lines.push(out.c.yellow(`${r.session}: ${r.withheld.reason}`));
  for (const rec of r.recovered.slice(0, LISTED_RECOVERIES)) {
    lines.push(`${r.session}: ${rec.key} (entry ${rec.entryId}) is removed by ${rec.removedBy}; indexed as ${rec.ref} — condense query ${rec.ref}`);
  }
  if (r.recovered.length > LISTED_RECOVERIES)
    lines.push(`${r.session}: and ${r.recovered.length - LISTED_RECOVERIES} more removed results indexed (--json lists them)`);
  if (r.calls.ambiguous > 0) {
    lines.push(
      `${r.session}: ${r.calls.ambiguous} call(s) left raw: their result shares its id and timestamp with another result, so a stub could not tell them apart`,
    );
  }
  if (r.calls.keptForErrorPurge > 0) {
    lines.push(`${r.session}: ${r.calls.keptForErrorPurge} failed call(s) left raw: error purge takes their arguments, which a stub would bring back`);
  }
  return lines;
}

/** The human report: one row per session, then totals when there are several. */
function formatReport(results: RunFileResult[], out: Output): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const names = displayNames(results.map((r) => r.session));
  const row = (r: Pick<RunFileResult, "batches" | "calls" | "chains" | "context" | "target">, name: string, written: string): string[] => [
    name,
    n(r.batches.captured),
    n(r.batches.summarized),
    `${r.batches.skippedTrivial}/${r.batches.skippedDeduped}/${r.batches.skippedOversized}${r.batches.failed ? `, ${r.batches.failed} failed` : ""}`,
    n(r.calls.spilled),
    n(r.chains?.compressed ?? 0),
    `${n(shownContext(r).before.tokens)} → ${n(shownContext(r).after.tokens)} (${pct(shownContext(r).before.tokens, shownContext(r).after.tokens)})`,
    written,
  ];
  const rows = results.map((r, i) =>
    row(r, names[i], r.dryRun ? `would add ${r.entriesAppended}` : r.written ? `+${r.entriesAppended}` : r.backup ? "migrated only" : "nothing to do"),
  );
  if (results.length > 1) rows.push(totalsRow(results, out, row));
  const table = out.table(["session", "batches", "summarized", "skipped t/d/o", "spilled", "chains", "context ~tokens", "entries"], rows, [
    "left",
    "right",
    "right",
    "right",
    "right",
    "right",
    "right",
    "left",
  ]);
  const lines = [table];
  const wall = results.reduce((t, r) => t + r.wallMs, 0);
  lines.push(out.c.dim(`skipped t/d/o = trivial / deduplicated / oversized · context: what Pi sends for the target · ${(wall / 1000).toFixed(2)} s`));
  lines.push(...targetLines(results, out));
  for (const r of results) {
    if (r.usage.calls > 0) {
      const cost = r.usage.cost > 0 ? ` · $${r.usage.cost.toFixed(4)}` : "";
      lines.push(
        `${r.session}: ${r.usage.calls} calls to ${r.summarizer} · ${r.usage.input.toLocaleString("en-US")} input + ${r.usage.output.toLocaleString("en-US")} output tokens${cost}`,
      );
    }
    for (const f of r.failures) lines.push(out.c.red(`${r.session}: batch at turn ${f.turnIndex} stays raw: ${f.reason}`));
    lines.push(...keptLines(r, out));
  }
  return lines.join("\n");
}
