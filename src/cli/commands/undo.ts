/**
 * `condense undo <session>`: remove the entries and sidecars of the last `run` or `compact` that
 * wrote to the session in place, when nothing was appended after them (pipeline/undo.ts); otherwise
 * refuse and say why (exit 1). `--dry-run` says what would be removed (and warns when the real undo
 * would refuse a session this user cannot write: `wouldRefuse`); `--json` prints one document
 * (`condense.undo/1`, docs/json-schemas.md). Each call undoes one write; earlier ones, one by one.
 */
import type { Command } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { type UndoResult, undoSession, writeName } from "../../pipeline/undo.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { UsageError } from "../../util/errors.js";
import { type CommonOptions, type ExitState, withCommonOptions } from "../options.js";
import { Output } from "../output.js";
import { undoCommand } from "../write-report.js";

/** Version of the `--json` document. */
export const UNDO_SCHEMA = "condense.undo/1";

interface UndoCliOptions extends CommonOptions {
  dryRun?: boolean;
  force?: boolean;
}

export function registerUndo(program: Command, _exit: ExitState): void {
  const cmd = program
    .command("undo")
    .description(COMMAND_SUMMARIES.undo.description)
    .argument("[session]", "session file or id (default: latest session of this directory)")
    .option("--dry-run", "say what would be removed; change nothing")
    .option("--force", "undo even while Pi or another process has the session open")
    .addHelpText(
      "after",
      "\nThe file is truncated back to exactly its size before that write, under the session's lock, and the\n" +
        "sidecar files the write created are removed. Run it again to undo the write before (the last 20 are kept).\n" +
        "\nExamples:\n  condense undo session.jsonl --dry-run\n  condense undo session.jsonl",
    );
  withCommonOptions(cmd).action(async (arg: string | undefined, options: UndoCliOptions) => {
    const out = new Output(options);
    const files = await resolveSessionArgs(arg === undefined ? [] : [arg]);
    if (files.length !== 1) throw new UsageError(`undo takes one session; ${arg ?? "the default"} names ${files.length} files`);
    const result = await undoSession(files[0], { dryRun: !!options.dryRun, force: !!options.force });
    if (options.json) {
      out.printJson({ schema: UNDO_SCHEMA, ...result });
      return;
    }
    if (result.settled) out.warn(`${result.session}: ${result.settled}`);
    out.print(undoLine(result));
    if (result.wouldRefuse) out.warn(`a real undo would refuse: ${result.wouldRefuse}`);
  });
}

/**
 * `undid condense run of 2026-03-01 12:00:00 UTC on /p/s.jsonl: removed 56 entries (164,368 bytes;
 * 4,209,755 → 4,045,387 bytes) and 3 sidecar files; 1 earlier write can still be undone: condense undo /p/s.jsonl`
 */
export function undoLine(r: UndoResult): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const what = `${n(r.entries)} ${r.entries === 1 ? "entry" : "entries"} (${n(r.bytes)} bytes; ${n(r.sizeBefore)} → ${n(r.sizeAfter)} bytes)`;
  const sidecars = r.sidecars.length > 0 ? ` and ${r.sidecars.length} sidecar file${r.sidecars.length === 1 ? "" : "s"}` : "";
  const original = r.restored && `the v${r.restored.fromVersion} original from ${r.restored.backup} (${n(r.restored.bytes)} bytes)`;
  const gone = r.restored && `its v3 rewrite and ${n(r.entries)} ${r.entries === 1 ? "entry" : "entries"}${sidecars}`;
  const head = r.restored
    ? r.finished
      ? r.dryRun
        ? `would finish undoing ${writeName(r)} on ${r.session}: ${original} was already back; its record would go`
        : `finished undoing ${writeName(r)} on ${r.session}: ${original} was already back; its record is gone now`
      : r.dryRun
        ? `would undo ${writeName(r)} on ${r.session}: put back ${original}, in place of ${gone}`
        : `undid ${writeName(r)} on ${r.session}: put back ${original}, in place of ${gone}`
    : r.dryRun
      ? r.finished
        ? `would finish undoing ${writeName(r)} on ${r.session}: its ${what} were already removed; its sidecar files and record would go`
        : `would undo ${writeName(r)} on ${r.session}: remove ${what}${sidecars}`
      : r.finished
        ? `finished undoing ${writeName(r)} on ${r.session}: its ${what} were already removed; its sidecar files and record are gone now`
        : `undid ${writeName(r)} on ${r.session}: removed ${what}${sidecars}`;
  const kept =
    r.keptSidecars.length > 0 ? `; kept ${r.keptSidecars.length} sidecar file${r.keptSidecars.length === 1 ? "" : "s"} ${r.keptSidecars[0].namedBy} names` : "";
  const earlier = r.earlier > 0 ? `; ${r.earlier} earlier write${r.earlier === 1 ? "" : "s"} can still be undone: ${undoCommand(r.session)}` : "";
  return `${head}${kept}${r.restoreProblem ? `; ${r.restoreProblem}` : ""}${earlier}`;
}
