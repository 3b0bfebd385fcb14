/**
 * Helpers for the chain-compression tests: run `condense run` on a temp copy of a fixture with a
 * fixed clock and an empty Pi agent folder, and read back what it appended.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { runCli as captureCli } from "./cli-harness.js";
import { loadSession, type Session } from "../src/session/session.js";
import { type LooseEntry, loose } from "./helpers.js";

export const FIXTURES = path.resolve(__dirname, "../fixtures");
export const SHARED_SESSIONS = path.resolve(__dirname, "../../shared/sessions");
/** CONDENSE_NOW used by every run in these tests, and its epoch ms. */
export const NOW_ISO = "2026-02-01T00:00:00.000Z";
export const NOW_MS = Date.parse(NOW_ISO);

const dirs: string[] = [];

/** A fresh temp folder, removed by {@link cleanupTempDirs}. */
export function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "condense-chain-"));
  dirs.push(dir);
  return dir;
}

export function cleanupTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Copy a file into a new temp folder; returns the copy's path. */
export function tempCopy(src: string): string {
  const dest = path.join(tempDir(), path.basename(src));
  copyFileSync(src, dest);
  return dest;
}

/**
 * Run the CLI with a fixed clock and an agent folder without settings. The chain tests check the
 * extension's entries, so `run` writes for the extension only (`--target extension`; native mode
 * has tests of its own). @returns the exit code
 */
export async function runCli(args: string[]): Promise<number> {
  const target = args[0] === "run" && !args.includes("--target") ? ["--target", "extension"] : [];
  return (await captureCli([...args, ...target], { CONDENSE_NOW: NOW_ISO, PI_CODING_AGENT_DIR: path.join(tempDir(), "agent") })).code;
}

export interface RunOutcome {
  path: string;
  before: Session;
  after: Session;
  /** Entries the run appended, in file order. */
  appended: LooseEntry[];
  code: number;
}

/** `condense run <copy of fixture> --quiet ...extra`, then the session before and after. */
export async function runFixture(name: string, extra: string[] = []): Promise<RunOutcome> {
  const file = tempCopy(path.join(FIXTURES, name));
  const before = await loadSession(file);
  const code = await runCli(["run", file, "--quiet", ...extra]);
  const after = await loadSession(file);
  return { path: file, before, after, appended: loose(after.entries.slice(before.entries.length)), code };
}

/** The `data` of appended custom entries of one customType. */
export function dataOf(entries: object[], customType: string): unknown[] {
  return loose(entries)
    .filter((e) => e.customType === customType)
    .map((e) => e.data);
}

/** Text of the first text block of a message (or its string content). */
export function firstTextOf(m: { content?: unknown }): string {
  if (typeof m.content === "string") return m.content;
  const block = Array.isArray(m.content) ? m.content.find((b) => b?.type === "text") : undefined;
  return block?.text ?? "";
}
