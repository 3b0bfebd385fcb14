/**
 * `condense query <ref...>` (docs/design.md §8): print the stored original output behind short
 * refs (`t3`), occurrence keys (`id@timestamp`) or raw tool-call ids, from the session named by
 * `--session` (default: `$PI_SESSION_FILE`, which Pi's bash tool sets to the current session, else
 * the latest session of the current directory; so an agent can run `condense query t3` from its
 * bash tool). Unknown refs are named on stderr and make the exit code 1; the others are still
 * printed.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Command, Option } from "commander";
import { COMMAND_SUMMARIES } from "../command-list.js";
import { ToolCallIndexer } from "../../prune/indexer.js";
import { projectBranch } from "../../context/projection.js";
import { withoutOwnContextEdits } from "../../entries/read.js";
import { type ContextOccurrences, contextOccurrences } from "../../prune/occurrences.js";
import { imageLines, imagesOf, type ResultImage } from "../../query/images.js";
import {
  formatQueryBlock,
  formatToolResult,
  lookupRef,
  type QueryBody,
  type QueryHit,
  type QueryOutput,
  recordBody,
  shownOutput,
  sidecarCandidates,
  sidecarFolders,
} from "../../query/query.js";
import { lineOf } from "../../report/session-metrics.js";
import type { Session } from "../../session/session.js";
import { resolveSessionArgs } from "../../session/locate.js";
import { formatWarning, openSession } from "../../session/open.js";
import { forkParent } from "../../session/fork.js";
import { readSidecar, readSidecarIn, SidecarRefused, writeFileAtomic } from "../../session/sidecars.js";
import { checkWriteTarget } from "../../session/write-target.js";
import { errnoWords, UsageError } from "../../util/errors.js";
import { Output } from "../output.js";
import { type CommonOptions, type ExitState, withCommonOptions } from "../options.js";

interface QueryOptions extends CommonOptions {
  session?: string;
  force?: boolean;
  full?: boolean;
  format: "text" | "tool";
  saveImages?: string;
}

/**
 * One hit as printed: its output (from the record or its sidecar), its images (located in the
 * session, and written to `saveImages` when given), and its `--json` object.
 * @param c.folders the folders sidecars are looked up in (`sidecarFolders`)
 */
function showHit(
  hit: QueryHit,
  c: {
    session: Session;
    folders: string[];
    occurrences: ContextOccurrences;
    readText: (path: string) => string;
    full: boolean;
    /** `--save-images` folder; each image to write is added to `writes`. */
    saveImages?: string;
    writes: ImageWrite[];
  },
): { body: QueryBody; output: QueryOutput; imageLines: string[]; json: Record<string, unknown> } {
  const candidates = hit.record.spillPath ? sidecarCandidates(hit.record.spillPath, c.folders) : [];
  const body = recordBody(hit.record, candidates, c.readText);
  const output = shownOutput(body.text, c.full);
  const images = imagesOf(c.occurrences, hit.key, (e) => lineOf(c.session, e));
  const saved = new Map<ResultImage, string>();
  if (c.saveImages !== undefined) {
    for (const img of images) {
      const path = join(c.saveImages, img.fileName);
      c.writes.push({ path, bytes: Buffer.from(img.data, "base64") });
      saved.set(img, path);
    }
  }
  const json = {
    ref: hit.ref,
    label: hit.label,
    key: hit.key,
    shortRef: hit.shortRef ?? null,
    aliasOf: hit.aliasOf ?? null,
    legacy: hit.legacy,
    record: hit.record,
    output: output.text,
    outputSource: body.source,
    ...(body.sidecarPath ? { sidecarPath: body.sidecarPath } : {}),
    ...(body.sidecarError ? { sidecarError: body.sidecarError } : {}),
    truncated: output.truncation ? { shownLines: output.truncation.shownLines, totalLines: output.truncation.totalLines, by: output.truncation.by } : null,
    images: images.map((img) => ({
      entryId: img.entryId,
      line: img.line,
      block: img.block,
      mimeType: img.mimeType,
      bytes: img.bytes,
      savedTo: saved.get(img) ?? null,
    })),
  };
  return { body, output, imageLines: imageLines(images, saved), json };
}

/**
 * `--format tool`'s sidecar reader: a sidecar it cannot read is said on stderr, so a script can tell
 * (the tool's text shows the stored head preview instead, as the extension's tool does).
 */
function toolSidecarReader(folders: string[], out: Output): (path: string) => string {
  return (path) => {
    try {
      return readSidecarIn(folders, path);
    } catch (error) {
      const why = error instanceof SidecarRefused ? `${error.kind}: ${path}: ${error.reason}` : `${path}: ${errnoWords(error)}`;
      out.warn(`spilled output unavailable (${why}); the tool's text shows the stored head preview`);
      throw error;
    }
  };
}

/** An image `--save-images` writes. */
interface ImageWrite {
  path: string;
  bytes: Buffer;
}

/**
 * `--save-images DIR`: a folder, created when missing (its parent must exist), never a file; an
 * image file already there is replaced only when it holds the same bytes or with `--force`
 * (write-target.ts). Everything is checked before the first file is written.
 * @throws UsageError (exit 2) naming the path; nothing was written
 */
async function saveImages(dir: string, writes: ImageWrite[], session: string, force: boolean): Promise<void> {
  const flag = "--save-images";
  const st = statSync(dir, { throwIfNoEntry: false });
  if (st && !st.isDirectory()) throw new UsageError(`${flag} ${dir} is not a folder; name a folder (it is created when missing; nothing was written)`);
  if (!st) {
    await checkWriteTarget(dir, { flag, inputs: [session], force: false });
    if (writes.length > 0) mkdirSync(dir);
  }
  const sameBytes = (bytes: Buffer) => (path: string) => statSync(path).size === bytes.length && readFileSync(path).equals(bytes);
  for (const w of writes) await checkWriteTarget(w.path, { flag, inputs: [session], force, isOwnOutput: sameBytes(w.bytes) });
  for (const w of writes) await writeFileAtomic(w.path, w.bytes);
}

/**
 * Hints on the error when no session was found: a `.jsonl` file typed among the refs
 * (`condense query t1 big.jsonl`) is named as the `--session` it probably was; a `--session` that
 * names nothing while `$PI_SESSION_FILE` names a session (a stub's path after the file moved, run
 * inside Pi) is told that leaving out `--session` reads it.
 */
function currentSessionHint(error: unknown, named: string | undefined, refs: string[]): unknown {
  if (!(error instanceof UsageError)) return error;
  // `condense query t1 big.jsonl`: the session typed as a ref, where no session was found.
  const typed = named === undefined ? refs.find((r) => r.endsWith(".jsonl") && statSync(r, { throwIfNoEntry: false })?.isFile()) : undefined;
  if (typed !== undefined) return new UsageError(`${error.message}. ${typed} is a file given as a ref: did you mean --session ${typed}?`);
  const current = process.env.PI_SESSION_FILE;
  if (named === undefined || !current || !existsSync(current)) return error;
  return new UsageError(`${error.message}. $PI_SESSION_FILE names ${current} (inside Pi: the current session); without --session condense query reads it`);
}

export function registerQuery(program: Command, exit: ExitState): void {
  const cmd = program
    .command("query")
    .description(COMMAND_SUMMARIES.query.description)
    .argument("<refs...>", "short refs like t3, occurrence keys like bash_23@1745251200000, or raw tool-call ids")
    .option("--session <session>", "session file, id or id prefix (default: $PI_SESSION_FILE inside Pi, else the latest session of this directory)")
    .option("--full", "print whole outputs (default: the first 2000 lines / 50 KB)")
    .option("--save-images <dir>", "write the images of the recovered tool results into this folder (the text names where they are)")
    .option("--force", "with --save-images: overwrite image files of the same name that hold other bytes")
    .addOption(
      new Option("--format <format>", "text: readable blocks; tool: exactly what the extension's context_tree_query returns")
        .choices(["text", "tool"])
        .default("text"),
    )
    .addHelpText("after", "\nExamples:\n  condense query t3\n  condense query t3 t7 --session session.jsonl\n  condense query bash_23 --full --json");
  withCommonOptions(cmd).action(async (refs: string[], options: QueryOptions) => {
    const out = new Output(options);
    const files = await resolveSessionArgs(options.session !== undefined ? [options.session] : [], { naming: "--session" }).catch((error: unknown) => {
      throw currentSessionHint(error, options.session, refs);
    });
    if (files.length !== 1) throw new UsageError(`--session must name one session; ${options.session} names ${files.length} files`);
    const session = await openSession(files[0], "read");
    // The lines Pi skips are said to a person at a terminal; an agent recovering an output through
    // Pi's bash tool (no terminal) would read them on every recovery, about nothing it asked for.
    // An interrupted write read around changes what can be recovered: that one is always said.
    for (const w of session.warnings) if (process.stderr.isTTY || w.kind === "interrupted-write") out.warn(formatWarning(w));
    const indexer = ToolCallIndexer.fromBranch(session.branch);
    // Sidecars only from the session's own blobs folder, next to its real path (a fork: its parent's too).
    const folders = sidecarFolders(realpathSync(session.path), session.id, await forkParent(session.header?.parentSession, session.path));
    const readText = (path: string) => readSidecar(dirname(path), path, folders);
    const full = !!options.full;

    // --format tool: the text the extension's context_tree_query tool returns for these refs.
    if (options.format === "tool") {
      if (options.json) throw new UsageError("--format tool prints the tool's text; it cannot be combined with --json");
      const { text, unknown } = formatToolResult(indexer, refs, toolSidecarReader(folders, out), full);
      out.write(`${text}\n`); // the tool's text exactly, plus one newline (control characters escaped on a terminal)
      for (const ref of unknown) out.error(`unknown ref ${ref}: not in this session's pruner index`);
      if (unknown.length > 0) exit.code = 1;
      return;
    }

    const results: Record<string, unknown>[] = [];
    const blocks: string[] = [];
    const unknown: { ref: string; reason: string }[] = [];
    const writes: ImageWrite[] = [];
    // The results as the user has them: a stock-Pi stub (run --target pi) leaves no image in the projection.
    const occurrences = contextOccurrences(projectBranch(withoutOwnContextEdits(session.branch)));
    for (const ref of refs) {
      const lookup = lookupRef(indexer, ref);
      if (lookup.unknown) {
        unknown.push({ ref, reason: lookup.unknown });
        continue;
      }
      for (const hit of lookup.hits) {
        const shown = showHit(hit, { session, folders, occurrences, readText, full, saveImages: options.saveImages, writes });
        // Said on stderr too, so a script can tell the head preview from the output (the exit code stays 0).
        if (shown.body.sidecarError) out.warn(`${hit.label}: spilled output unavailable (${shown.body.sidecarError}); showing the stored head preview`);
        if (options.json) results.push(shown.json);
        else blocks.push(formatQueryBlock(hit, shown.body, shown.output, out.c, shown.imageLines));
      }
    }
    if (options.saveImages !== undefined) await saveImages(options.saveImages, writes, session.path, !!options.force);
    if (options.json) out.printJson({ session: session.path, results, unknown });
    // Always one newline after the last block, so an output's own final newline survives (byte-exact).
    else if (blocks.length > 0) out.write(`${blocks.join("\n\n")}\n`);
    for (const u of unknown) out.error(`unknown ref ${u.ref}: ${u.reason}`);
    if (unknown.length > 0) exit.code = 1;
  });
}
