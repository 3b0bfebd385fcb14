/**
 * `condense report <session...>`: a picture of each session — context per turn as the provider
 * reported it and as estimated, recorded compactions and model switches, where the pruning triggers
 * and Pi's own auto-compaction would fire, the context before → after `run` (with the extension and
 * as stock Pi sends it) and after `compact`, the largest tool outputs with their refs — as one
 * self-contained HTML page (`--html FILE`), as JSON (`--json`, `condense.report/1`), or as a table.
 * Nothing is written to the sessions; no model is called.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Option, type Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { loadConfig } from "../../config/config.js";
import { sentContext } from "../../context/size.js";
import { piCompactionLabel, piCompactionOutlook } from "../../report/budget-compaction.js";
import { isReportPageHead, REPORT_PAGE_HEAD_BYTES, reportPage, type ChartLibrary } from "../../report/html-page.js";
import { REPORT_SCHEMA, reportTotals, sectionAnchors, type ReportDocument, type SessionReport } from "../../report/session-report.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { writeFileAtomic } from "../../session/sidecars.js";
import { checkWriteTarget } from "../../session/write-target.js";
import { UsageError } from "../../util/errors.js";
import {
  defaultJobs,
  type FileOutcome,
  failedSessionsMessage,
  forEachSession,
  interruptedJson,
  interruptedMessage,
  interruptOnSigint,
  positiveInt,
  splitOutcomes,
} from "../batch.js";
import { formatBytes, n, percentChange, shortCount } from "../format.js";
import { Output, sessionLabels, wrapWords } from "../output.js";
import { parseTokenCount } from "../units.js";
import type { Column } from "../table.js";
import { type CommonOptions, type ExitState, withCommonOptions, configSources, type ConfigFlags, tokensFlag, withConfigOptions } from "../options.js";
import type { ReportTaskOptions } from "../report-task.js";
import { packageVersion } from "../version.js";

interface ReportOptions extends CommonOptions, ConfigFlags {
  html?: string;
  force?: boolean;
  jobs?: string;
  top?: string;
  contextWindow?: string;
  reserveTokens?: string;
}

/** The chart library bundled into the page: uPlot's browser build and stylesheet, from its installed package. */
export function chartLibrary(): ChartLibrary {
  const require = createRequire(import.meta.url);
  const read = (file: string) => readFileSync(require.resolve(`uplot/dist/${file}`), "utf8");
  return { script: read("uPlot.iife.min.js"), style: read("uPlot.min.css") };
}

export function registerReport(program: Command, exit: ExitState): void {
  const cmd = program
    .command("report")
    .description(COMMAND_SUMMARIES.report.description)
    .argument("[sessions...]", "session files, directories, globs or ids (default: latest session of this directory)")
    .option("--html <file>", "write one self-contained HTML page (no network needed to view it); - for stdout")
    .option("--force", "overwrite an existing --html file that is not a report page (a session is never overwritten)")
    .addOption(new Option("--jobs <n>", "sessions processed at once, in worker threads (default: number of cores)"))
    .addOption(new Option("--top <n>", "largest tool outputs listed per session").default("10", "10"))
    .option("--context-window <tokens>", "context window for every turn (200000, 200k, 1M), instead of pi-ai's model registry")
    .option("--reserve-tokens <n>", "compaction.reserveTokens for Pi's own auto-compaction (default: Pi's settings, else 16384)");
  withConfigOptions(cmd).addHelpText(
    "after",
    "\nThe figures are those of `metrics --json`, `budget --json`, `run --dry-run --json` and `compact --dry-run --json`\n" +
      "(run with the deterministic summarizer, compact with the zero-model summary). Exit codes: 0; 1 a session\n" +
      "failed (the others are still reported); 2 usage error, or one session that cannot be used.\n" +
      "\nExamples:\n  condense report session.jsonl --html report.html\n  condense report ~/.pi/agent/sessions/ --html archive.html\n  condense report session.jsonl --json",
  );
  withCommonOptions(cmd).action(async (args: string[], options: ReportOptions) => {
    const out = new Output(options);
    if (options.html === "-" && options.json) throw new UsageError("--html - and --json both write to stdout; give --html a file");
    const jobs = positiveInt("--jobs", options.jobs, defaultJobs());
    const top = positiveInt("--top", options.top, 10);
    const contextWindow = options.contextWindow === undefined ? undefined : parseTokenCount("--context-window", options.contextWindow, { min: 1 });
    const taskOptions: ReportTaskOptions = {
      config: loadConfig(configSources(options)),
      top,
      contextWindow,
      reserveTokens: tokensFlag("--reserve-tokens", options.reserveTokens),
    };
    // The library is read before any work, so a broken install fails at once.
    const library = options.html !== undefined ? chartLibrary() : null;
    const files = await resolveSessionArgs(args);
    if (options.html !== undefined && options.html !== "-") {
      await checkWriteTarget(options.html, { flag: "--html", inputs: files, force: !!options.force, isOwnOutput: isReportPage });
    }
    // Loaded when the command runs: start-up and the other commands do not pay for it.
    const { REPORT_TASK_MODULE, reportTask } = await import("../report-task.js");
    const interrupt = interruptOnSigint();
    let outcomes: FileOutcome<SessionReport>[];
    try {
      outcomes = await forEachSession<SessionReport>(files, out, {
        jobs,
        label: "report",
        work: (file) => reportTask(file, taskOptions),
        remote: { module: REPORT_TASK_MODULE, fn: "reportTask", options: taskOptions },
        signal: interrupt.signal,
      });
    } finally {
      interrupt.release();
    }
    const split = splitOutcomes(outcomes);
    const { results, failures } = split;
    if (failures.length > 0) exit.code = files.length === 1 ? failures[0].exitCode : 1;
    for (const r of results) for (const w of r.warnings) out.warn(w);
    for (const f of failures) out.error(f.error);
    const doc = reportDocument(results, failures);
    // After Ctrl-C no page is written (it would pass for the whole report); JSON and the table show the sessions done.
    const interrupted = interrupt.signal.aborted ? interruptedJson(split) : undefined;
    if (library && options.html !== undefined && !interrupted) await writePage(doc, library, options.html, out);
    if (options.json) out.printJson(interrupted ? { ...doc, interrupted } : doc);
    else if (options.html === undefined && results.length > 0) out.print(formatTable(doc, out));
    if (interrupted) {
      exit.code = 130;
      if (!options.json) out.error(interruptedMessage(split, files.length, options.html !== undefined ? "page" : "read"));
    } else {
      const failed = failedSessionsMessage(failures.length, files.length, "are reported");
      if (failed) out.error(failed);
    }
  });
}

/** The document: sessions with their section anchors, totals, failures. */
export function reportDocument(results: SessionReport[], failures: { session: string; error: string }[]): ReportDocument {
  const anchors = sectionAnchors(results.map((r) => r.label));
  const sessions = results.map((r, i) => ({ ...r, anchor: anchors[i] }));
  return {
    schema: REPORT_SCHEMA,
    version: packageVersion(),
    sessions,
    totals: reportTotals(sessions, failures.length),
    failures: failures.map(({ session, error }) => ({ session, error })),
  };
}

/** True when `file` starts like a page `report --html` wrote (replaced without --force). */
function isReportPage(file: string): boolean {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK); // a FIFO is not waited on
    try {
      if (!fstatSync(fd).isFile()) return false;
      const head = Buffer.alloc(REPORT_PAGE_HEAD_BYTES);
      return isReportPageHead(head.toString("utf8", 0, readSync(fd, head, 0, head.length, 0)));
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** Write the page atomically (never half-written), or to stdout for `-`. */
async function writePage(doc: ReportDocument, library: ChartLibrary, file: string, out: Output): Promise<void> {
  const page = reportPage(doc, library);
  if (file === "-") {
    out.write(page);
    return;
  }
  const target = path.resolve(file);
  try {
    await writeFileAtomic(target, page);
  } catch (error) {
    throw new UsageError(`--html ${file}: cannot write the page: ${(error as Error).message}`);
  }
  const kb = Math.round(Buffer.byteLength(page) / 1024);
  out.info(`wrote ${target} (${kb.toLocaleString("en-US")} KB, ${doc.sessions.length} session${doc.sessions.length === 1 ? "" : "s"})`);
}

/**
 * The table's columns: every one, the short figures with the facts beside them, and the ones kept
 * on a narrow terminal. Each leads with what the session's Pi sends (`Pi`: stock Pi unless
 * pi-condense is installed and on) now → after run → after compact, every change against that
 * same "now"; the other Pi's figure after run comes last.
 */
const WIDE: Column[] = [
  { head: "session", fit: true, minWidth: 28 },
  { head: "size", align: "right" },
  { head: "peak reported", align: "right" },
  { head: "Pi", align: "left" },
  { head: "run", align: "right" },
  { head: "compact", align: "right" },
  { head: "other Pi: run", align: "right" },
  { head: "Pi compacts", align: "left" },
  { head: "cost", align: "right" },
];
const COMPACT: Column[] = [
  { head: "session", fit: true, minWidth: 16 },
  { head: "Pi", align: "left" },
  { head: "now", align: "right" },
  { head: "run", align: "right" },
  { head: "compact", align: "right" },
  { head: "other", align: "right" },
];
// The session label keeps WIDE's minimum here too (28 columns): MEDIUM is chosen only where the
// label keeps that much room; below it, COMPACT shows more of the label instead.
const MEDIUM: Column[] = [WIDE[0], { head: "size", align: "right" }, ...COMPACT.slice(1), WIDE[7], WIDE[8]];

/** Where Pi itself would auto-compact: the turns, never, ? (a window unknown, as `compact --if-over` says), or off. */
function piCompactsCell(s: ReportDocument["sessions"][number]): string {
  const outlook = piCompactionOutlook(s.budget);
  if (outlook.state === "off") return "off";
  if (outlook.state === "unknown") return "? (window unknown)";
  if (outlook.state === "never") return "never";
  return `${s.budget.summary.piCompactions.map(piCompactionLabel).join(", ")}${outlook.unknownTurns > 0 ? ", ?" : ""}`;
}

/** The table without a browser: one row per session, fitted to the terminal. */
function formatTable(doc: ReportDocument, out: Output): string {
  const labels = sessionLabels(doc.sessions);
  type Change = { before: { tokens: number }; after: { tokens: number } };
  const change = (c: Change) => `${n(c.before.tokens)} → ${n(c.after.tokens)} (${percentChange(c.before.tokens, c.after.tokens)})`;
  // What the session's Pi sends (stock Pi's unless the extension is installed and on), and the other Pi's.
  const sent = (s: ReportDocument["sessions"][number]) => ({
    pi: s.run.target.used === "pi" ? "stock" : "ext.",
    run: sentContext(s.run.context, s.run.target),
    compact: sentContext(s.compact.context, s.compact.target),
    other: s.run.target.used === "pi" ? s.run.context : s.run.context.piOnly,
  });
  const wide = doc.sessions.map((s, i) => {
    const peak = s.budget.summary.peakTokens;
    const f = sent(s);
    return [
      labels[i],
      formatBytes(s.bytes),
      peak === null ? "—" : n(peak),
      f.pi,
      change(f.run),
      change(f.compact),
      change(f.other),
      piCompactsCell(s),
      `$${s.usage.cost.toFixed(2)}`,
    ];
  });
  // Short: the size the session's Pi sends now, then each "after" with its change against that "now".
  const after = (c: Change) => `${shortCount(c.after.tokens)} ${percentChange(c.before.tokens, c.after.tokens)}`;
  const narrow = doc.sessions.map((s, i) => {
    const f = sent(s);
    return [labels[i], f.pi, shortCount(f.run.before.tokens), after(f.run), after(f.compact), shortCount(f.other.after.tokens)];
  });
  const medium = doc.sessions.map((s, i) => [narrow[i][0], formatBytes(s.bytes), ...narrow[i].slice(1), wide[i][7], wide[i][8]]);
  const { text } = out.fitted([
    { columns: WIDE, rows: wide },
    { columns: MEDIUM, rows: medium },
    { columns: COMPACT, rows: narrow },
  ]);
  const legend =
    "~tokens the session's Pi sends (Pi: stock Pi, or ext. when pi-condense is installed and on) now → after run and after compact, " +
    "each change against that now · other: the other Pi after run · condense report --html FILE draws them per turn";
  return `${text}\n${out.c.dim(wrapWords(legend, out.width))}`;
}
