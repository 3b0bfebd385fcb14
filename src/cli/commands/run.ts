/**
 * `condense [run] <session...>`: the main job (SPEC.md sections 2, 5, 6). Per session: plan in
 * memory, then write sidecars atomically, then append the entries in one locked write — or, with
 * `--output FILE`, write the original bytes plus the new entries to FILE. `--dry-run` writes nothing.
 */
import { copyFile, readFile, realpath, stat } from "node:fs/promises";
import { setMaxListeners } from "node:events";
import { existsSync } from "node:fs";
import { Option, type Command } from "commander";
import { loadConfig, type PruneConfig } from "../../config/config.js";
import type { FlushProgress } from "../../prune/flush.js";
import { planRun, type RunReport } from "../../prune/plan.js";
import { idleRunReport, pendingWork } from "../../prune/pending.js";
import { buildSession, formatWarning, openSession, resolveSessionArgs, type Session } from "../../session/index.js";
import { appendEntries, assertUnchanged, serializeAppend, withSessionLock } from "../../session/writer.js";
import { writeFileAtomic } from "../../session/sidecars.js";
import { parseSessionText } from "../../session/reader.js";
import { createSummarizer, summarizerKind } from "../../summarize/select.js";
import { nowMs } from "../../util/clock.js";
import { CondenseError, UsageError } from "../../util/errors.js";
import { defaultJobs, forEachSession, positiveInt } from "../batch.js";
import { type ExitState, withCommonOptions } from "../main.js";
import { displayNames, Output } from "../output.js";
import { collect, configSources, type ConfigFlags } from "../config-flags.js";

interface RunOptions extends ConfigFlags {
  dryRun?: boolean;
  summarizer?: "deterministic" | "llm";
  model?: string;
  fallbackModel?: string;
  concurrency?: string;
  jobs?: string;
  chain?: boolean;
  force?: boolean;
  migrate?: boolean;
  output?: string;
  json?: boolean;
  quiet?: boolean;
}

export interface RunFileResult extends RunReport {
  dryRun: boolean;
  written: string | null;
  bytesAppended: number;
  migratedFrom?: number;
  backup?: string;
  wallMs: number;
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
    .option("--jobs <n>", "sessions processed at once (default: number of cores)")
    .option("--config <file>", "JSON file with configuration keys (or a settings.json with contextPrune)")
    .option("--set <key=value>", "set any configuration key (repeatable)", collect, [])
    .option("--no-chain", "skip chain compression")
    .option("--migrate", "rewrite v1/v2 sessions as v3 first (after a backup), as Pi does on open")
    .option("--force", "overwrite an existing --output file or migration backup; write even if the last tool calls look still running")
    .option("--output <file>", "write the original bytes plus the new entries to FILE; the input stays untouched")
    .addHelpText(
      "after",
      "\nExamples:\n  condense session.jsonl\n  condense run session.jsonl --output condensed.jsonl\n  condense ~/.pi/agent/sessions/ --dry-run --json",
    );
  withCommonOptions(cmd).action(async (args: string[], options: RunOptions) => {
    const out = new Output(options);
    const started = Date.now();
    const config = loadConfig(configSources(options));
    const concurrency = positiveInt("--concurrency", options.concurrency, 4);
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const files = await resolveSessionArgs(args);
    if (options.output !== undefined) await checkOutput(options.output, files);
    if (summarizerKind({ kind: options.summarizer, model: options.model }, config) === "deterministic" && (options.thinking || options.fallbackModel)) {
      out.warn(`${options.thinking ? "--thinking" : "--fallback-model"} has no effect with the deterministic summarizer (name a model with --model)`);
    }
    // Ctrl-C: abort in-flight summarizer calls; a session not yet written stays untouched (exit 130).
    // A second Ctrl-C exits at once.
    const interrupt = new AbortController();
    setMaxListeners(0, interrupt.signal); // one listener per in-flight call
    const onSigint = () => {
      if (interrupt.signal.aborted) process.exit(130);
      interrupt.abort();
    };
    process.on("SIGINT", onSigint);
    let outcomes;
    try {
      outcomes = await forEachSession(files, jobs, out, "condensing", (path) =>
        runOne(path, options, config, concurrency, out, interrupt.signal, files.length === 1),
      );
    } finally {
      process.off("SIGINT", onSigint);
    }
    const results = outcomes.filter((o) => o.result).map((o) => o.result!);
    const failures = outcomes.filter((o) => o.error).map((o) => ({ session: o.path, error: o.error!, exitCode: o.exitCode ?? 1 }));
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

async function runOne(
  path: string,
  options: RunOptions,
  config: PruneConfig,
  concurrency: number,
  out: Output,
  signal: AbortSignal,
  showProgress: boolean,
): Promise<RunFileResult> {
  const started = Date.now();
  const interrupted = () => new CondenseError(`${path}: interrupted; nothing was written`, 130);
  if (signal.aborted) throw interrupted();
  // Write through a symlink to the session it names (as Pi does), with the blobs folder beside it.
  path = await realpath(path).catch(() => path);
  let session = await openSession(path, "write");
  if (!options.force && !options.dryRun) {
    const waiting = unansweredAtLeaf(session);
    if (waiting > 0 && Date.now() - session.mtimeMs < LIVE_WINDOW_MS) {
      throw new CondenseError(
        `${path}: the last message has ${waiting} tool call(s) still without a result and the file changed ` +
          `${Math.round((Date.now() - session.mtimeMs) / 1000)} s ago — Pi may be running those tools now; ` +
          "nothing was written. Run again once Pi is done, or pass --force",
        1,
      );
    }
  }
  for (const w of session.warnings) out.warn(formatWarning(w));
  const dryRun = !!options.dryRun;
  let migratedFrom: number | undefined;
  let backup: string | undefined;
  let baseBytes: Buffer | null = null;
  if (session.fileVersion < 3) {
    if (!options.migrate) {
      throw new UsageError(
        `${path}: a v${session.fileVersion} session; Pi rewrites such files as v3 when it opens them. ` +
          "Run with --migrate to back it up and rewrite it as v3 first (nothing was written)",
      );
    }
    migratedFrom = session.fileVersion;
    const migrated = serializeMigrated(session);
    if (dryRun || options.output) {
      baseBytes = Buffer.from(migrated, "utf8");
      session = reparse(path, migrated, session);
    } else {
      const target = `${path}.v${session.fileVersion}.bak`;
      if (existsSync(target) && !options.force) throw new UsageError(`${path}: backup ${target} already exists; use --force to overwrite it`);
      const read = session;
      // Under the lock, and only if the file is still the one read: a concurrent writer (or a
      // second condense) must never turn the backup into anything but the original bytes.
      await withSessionLock(path, async () => {
        await assertUnchanged(read);
        const mode = (await stat(path)).mode & 0o7777;
        await copyFile(path, target);
        await writeFileAtomic(path, migrated, mode);
      });
      backup = target;
      session = await openSession(path, "write");
    }
  }
  if (options.output && existsSync(options.output) && !options.force) {
    throw new UsageError(`--output ${options.output} already exists; use --force to overwrite it`);
  }
  // Already condensed (nothing to capture, compress or record): no summarizer, no plan, nothing written.
  const work = options.output ? undefined : pendingWork(session, config);
  const idle = work ? idleRunReport(session, work) : null;
  if (idle) {
    const migration = { ...(migratedFrom !== undefined ? { migratedFrom } : {}), ...(backup ? { backup } : {}) };
    return { ...idle, dryRun, written: null, bytesAppended: 0, ...migration, wallMs: Date.now() - started };
  }
  let spinner: ReturnType<Output["spinner"]> = null;
  const notice = (message: string) => {
    spinner?.clear();
    out.warn(`${path}: ${message}`);
    spinner?.render();
  };
  const summarizer = await createSummarizer(
    { kind: options.summarizer, model: options.model, fallbackModel: options.fallbackModel },
    config,
    session,
    { onNotice: notice },
  );
  if (showProgress && !summarizer.local) spinner = out.spinner(`summarizing with ${summarizer.name}`);
  let plan;
  try {
    plan = await planRun(session, {
      config,
      summarizer,
      concurrency,
      nowMs: nowMs(),
      targetPath: options.output ?? path,
      prepared: work,
      signal,
      onProgress: spinner ? (p) => (spinner!.text = progressLine(summarizer.name, p)) : undefined,
    });
  } catch (error) {
    if (signal.aborted) throw interrupted();
    throw error;
  } finally {
    spinner?.stop();
  }
  if (signal.aborted) throw interrupted();
  let written: string | null = null;
  let bytesAppended = 0;
  if (!dryRun && plan.entries.length > 0 || (!dryRun && options.output)) {
    try {
      for (const sidecar of plan.sidecars) await writeFileAtomic(sidecar.path, sidecar.text);
      if (options.output) {
        if (!baseBytes) await assertUnchanged(session);
        const original = baseBytes ?? (await readFile(path));
        if (!baseBytes && original.length !== session.size) {
          throw new CondenseError(`${path} changed while it was copied to --output; nothing was written — run again`, 1);
        }
        const appended = Buffer.from(serializeAppend(session, plan.entries), "utf8");
        await writeFileAtomic(options.output, Buffer.concat([original, plan.entries.length > 0 ? appended : Buffer.alloc(0)]));
        bytesAppended = plan.entries.length > 0 ? appended.length : 0;
        written = options.output;
      } else {
        bytesAppended = await appendEntries(session, plan.entries);
        written = path;
      }
    } catch (error) {
      if (error instanceof CondenseError) throw error;
      throw new CondenseError(`${path}: ${(error as Error).message}`, 1);
    }
  }
  return {
    ...plan.report,
    dryRun,
    written,
    bytesAppended,
    ...(migratedFrom !== undefined ? { migratedFrom } : {}),
    ...(backup ? { backup } : {}),
    wallMs: Date.now() - started,
  };
}

/** Seconds within which a session whose leaf waits for tool results is taken as live (Pi running). */
const LIVE_WINDOW_MS = 60_000;

/** Tool calls of the last message (an assistant message) that no result answers. */
function unansweredAtLeaf(session: Session): number {
  const leaf = session.branch[session.branch.length - 1];
  const m = leaf?.type === "message" ? (leaf.message as { role?: string; content?: unknown }) : undefined;
  if (m?.role !== "assistant" || !Array.isArray(m.content)) return 0;
  return m.content.filter((b) => b?.type === "toolCall").length;
}

/**
 * `--output` must name a new file (or an existing one with --force), never a folder and never the
 * input itself (that would replace it without the lock and the changed-file check).
 * @throws UsageError naming the problem
 */
async function checkOutput(output: string, files: string[]): Promise<void> {
  if (output.trim() === "") throw new UsageError("--output: empty path (is the variable you passed unset?)");
  if (files.length !== 1) throw new UsageError(`--output takes one session; ${files.length} were given`);
  const out = await stat(output).catch(() => null);
  if (!out) return;
  if (out.isDirectory()) throw new UsageError(`--output ${output} is a directory; name a file`);
  const input = await stat(files[0]).catch(() => null);
  if (input && input.dev === out.dev && input.ino === out.ino) {
    throw new UsageError(`--output ${output} is the input session itself; run without --output to prune it in place`);
  }
}

/** A v1/v2 session rewritten as v3 the way Pi rewrites it: header with `version: 3`, one JSON line per entry. */
function serializeMigrated(session: Session): string {
  const header = { ...session.header, version: 3 };
  return [header, ...session.entries].map((e) => `${JSON.stringify(e)}\n`).join("");
}

function reparse(path: string, text: string, previous: Session): Session {
  const raw = parseSessionText(path, text);
  raw.mtimeMs = previous.mtimeMs;
  return buildSession(raw);
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

/** The totals row of the report (several sessions). */
function totalsRow(
  results: RunFileResult[],
  out: Output,
  row: (r: Pick<RunFileResult, "batches" | "calls" | "chains" | "context">, name: string, written: string) => string[],
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
    calls: { spilled: sum((r) => r.calls.spilled), deduped: 0, protected: 0, summarized: 0, unanswered: 0 },
    chains: { compressed: sum((r) => r.chains?.compressed ?? 0), rangesSummarized: 0, backfilledCalls: 0, waiting: 0 },
    context: {
      before: { chars: 0, tokens: sum((r) => r.context.before.tokens) },
      after: { chars: 0, tokens: sum((r) => r.context.after.tokens) },
    },
  };
  const entries = sum((r) => r.entriesAppended);
  const written = results.every((r) => r.dryRun) ? `would add ${entries}` : `+${entries}`;
  return row(total, out.c.bold(`total (${results.length}${idle ? `, ${idle} with nothing to do` : ""})`), written).map(String);
}

/** The human report: one row per session, then totals when there are several. */
function formatReport(results: RunFileResult[], out: Output): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const names = displayNames(results.map((r) => r.session));
  const row = (r: Pick<RunFileResult, "batches" | "calls" | "chains" | "context">, name: string, written: string): string[] => [
    name,
    n(r.batches.captured),
    n(r.batches.summarized),
    `${r.batches.skippedTrivial}/${r.batches.skippedDeduped}/${r.batches.skippedOversized}${r.batches.failed ? `, ${r.batches.failed} failed` : ""}`,
    n(r.calls.spilled),
    n(r.chains?.compressed ?? 0),
    `${n(r.context.before.tokens)} → ${n(r.context.after.tokens)} (${pct(r.context.before.tokens, r.context.after.tokens)})`,
    written,
  ];
  const rows = results.map((r, i) =>
    row(r, names[i], r.dryRun ? `would add ${r.entriesAppended}` : r.written ? `+${r.entriesAppended}` : r.backup ? "migrated only" : "nothing to do"),
  );
  if (results.length > 1) rows.push(totalsRow(results, out, row));
  const table = out.table(
    ["session", "batches", "summarized", "skipped t/d/o", "spilled", "chains", "context ~tokens", "entries"],
    rows,
    ["left", "right", "right", "right", "right", "right", "right", "left"],
  );
  const lines = [table];
  const wall = results.reduce((t, r) => t + r.wallMs, 0);
  lines.push(out.c.dim(`skipped t/d/o = trivial / deduplicated / oversized · ${(wall / 1000).toFixed(2)} s`));
  for (const r of results) {
    if (r.usage.calls > 0) {
      const cost = r.usage.cost > 0 ? ` · $${r.usage.cost.toFixed(4)}` : "";
      lines.push(`${r.session}: ${r.usage.calls} calls to ${r.summarizer} · ${r.usage.input.toLocaleString("en-US")} input + ${r.usage.output.toLocaleString("en-US")} output tokens${cost}`);
    }
    for (const f of r.failures) lines.push(out.c.red(`${r.session}: batch at turn ${f.turnIndex} stays raw: ${f.reason}`));
  }
  return lines.join("\n");
}
