/**
 * Shared test helpers: temp folders, Pi's own modules (imported by file path, since the package
 * does not import by name on Node 20), and independent byte-level facts about JSONL files.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const REPO_ROOT = path.resolve(__dirname, "..");
export const FIXTURES = path.join(REPO_ROOT, "fixtures");
export const SHARED_SESSIONS = path.resolve(__dirname, "../../shared/sessions");
/** The shared session Pi refuses to open (no header). */
export const HEADERLESS_SHARED = "gjc-01-youtube-transcript-extraction.v3.jsonl";

/** The shared sessions' file names, sorted; none when the folder is absent. */
export function sharedSessionFiles(): string[] {
  return existsSync(SHARED_SESSIONS)
    ? readdirSync(SHARED_SESSIONS)
        .filter((f) => f.endsWith(".jsonl"))
        .sort()
    : [];
}

const PI_CORE = path.join(REPO_ROOT, "node_modules/@earendil-works/pi-coding-agent/dist/core");

/** Pi 1.6's SessionManager module (session-manager.js), loaded by file URL. */
export async function importPiSessionManager(): Promise<any> {
  const url = pathToFileURL(path.join(PI_CORE, "session-manager.js")).href;
  // a computed specifier, so TypeScript does not try to resolve the package
  return await import(/* @vite-ignore */ url);
}

/** Pi 1.6's messages module (messages.js: convertToLlm and friends), loaded by file URL. */
export async function importPiMessages(): Promise<any> {
  const url = pathToFileURL(path.join(PI_CORE, "messages.js")).href;
  return await import(/* @vite-ignore */ url);
}

/** Pi 1.6's compaction module (compaction/compaction.js: prepareCompaction, compact, estimates), loaded by file URL. */
export async function importPiCompaction(): Promise<any> {
  const url = pathToFileURL(path.join(PI_CORE, "compaction/compaction.js")).href;
  return await import(/* @vite-ignore */ url);
}

/** Pi 1.6's compaction utilities (compaction/utils.js: computeFileLists, serializeConversation), loaded by file URL. */
export async function importPiCompactionUtils(): Promise<any> {
  const url = pathToFileURL(path.join(PI_CORE, "compaction/utils.js")).href;
  return await import(/* @vite-ignore */ url);
}

/**
 * A fresh folder under /tmp itself (not `$TMPDIR`), so its path has the same length on every
 * machine: `/tmp/condense-<prefix>-XXXXXX`. For tests whose figures depend on a session's path —
 * stock Pi's stubs name it (`condense query tN --session PATH`), so the tokens and bytes `run`
 * adds grow with it. Call the returned function to remove it.
 */
export function fixedLengthTempDir(prefix: string): { dir: string; cleanup: () => void } {
  return makeTempDir(prefix, "/tmp");
}

/** A fresh temp folder `<root>/condense-<prefix>-XXXXXX` (root: `$TMPDIR`); call the returned function to remove it. */
export function makeTempDir(prefix: string, root = tmpdir()): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(root, `condense-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Copy `src` into `dir` (same base name unless `name` is given) and return the copy's path. */
export function copyInto(dir: string, src: string, name = path.basename(src)): string {
  const dest = path.join(dir, name);
  copyFileSync(src, dest);
  return dest;
}

/** Byte offset (0-based) of the start of 1-based line `line`, counted from the raw bytes. */
export function byteOffsetOfLine(bytes: Buffer, line: number): number {
  let offset = 0;
  for (let n = 1; n < line; n++) {
    const nl = bytes.indexOf(0x0a, offset);
    if (nl === -1) throw new Error(`file has fewer than ${line} lines`);
    offset = nl + 1;
  }
  return offset;
}

/** Byte offset of the start of every line (index 0 = line 1), counted from the raw bytes. */
export function lineStarts(bytes: Buffer): number[] {
  const starts = [0];
  for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, nl + 1)) starts.push(nl + 1);
  return starts;
}

/** 1-based numbers of non-blank lines that JSON.parse rejects, found independently of the reader. */
export function unparseableLines(file: string): number[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const out: number[] = [];
  lines.forEach((text, i) => {
    if (text.trim() === "") return;
    try {
      JSON.parse(text);
    } catch {
      out.push(i + 1);
    }
  });
  return out;
}

export const HEX8 = /^[0-9a-f]{8}$/;

/**
 * An entry seen as the plain object it is in the file, for assertions on any of its fields
 * (`SessionEntry` is a union: narrowing every entry a test inspects would only add noise).
 */
export type LooseEntry = { type: string; id: string; parentId: string | null; timestamp: string } & Record<string, any>;

export function loose<T extends object>(entries: T[]): LooseEntry[];
export function loose<T extends object>(entry: T): LooseEntry;
export function loose(value: object): LooseEntry | LooseEntry[] {
  return value as LooseEntry | LooseEntry[];
}
