/**
 * The condense side of the extension oracle, and the comparison. For each session file, two
 * states are compared: the file as it is ("before") and after `condense run` ("after", v1/v2 files
 * with `--migrate` as a user would). In each state condense renders the context
 * (`render --format json`), lists its short refs, and answers `query --format tool`; the harness
 * gives what Pi sends with the extension loaded, the refs the extension rebuilt, and what its
 * `context_tree_query` returns for the same ids.
 */
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { parseOccurrenceKey } from "../../src/context/vocabulary.js";
import { ToolCallIndexer } from "../../src/prune/indexer.js";
import { loadSession } from "../../src/session/session.js";
import { runCli, type CliRun } from "../cli-harness.js";
import { runHarness, type HarnessJob, type HarnessResult } from "./client.js";

export const NOW = "2026-02-01T00:00:00.000Z";
const TOOL_SEPARATOR = "\n\n---\n\n";

/** What condense says about one state of one session. */
export interface CondenseState {
  /** The file the harness opens (a copy: Pi rewrites v1/v2 files it opens). */
  piFile: string;
  render: CliRun;
  /** Short ref → occurrence key, from condense's index. */
  refs: Record<string, string>;
  nextShortRef: number;
  /** context_tree_query calls to compare (each a list of ids), and condense's answer to each. */
  queries: string[][];
  answers: CliRun[];
  /** Per short ref: what kind of record it names (for the coverage figures). */
  kinds: Record<string, RefKinds>;
}

export interface RefKinds {
  spilled: boolean;
  backfilled: boolean;
  /** Some dedup alias shares this ref. */
  aliased: boolean;
  truncated: boolean;
}

export interface OracleCase {
  name: string;
  source: string;
  before: CondenseState;
  /** Null when condense refused to run on the file (then `run` says why). */
  after: CondenseState | null;
  run: CliRun;
}

/** The condense side of one state: render, refs, queries. */
async function condenseState(file: string, piFile: string, env: Record<string, string>): Promise<CondenseState> {
  const render = await runCli(["render", file, "--as", "extension", "--format", "json", "--quiet"], env);
  let refs: Record<string, string> = {};
  let nextShortRef = 1;
  const queries: string[][] = [];
  const kinds: Record<string, RefKinds> = {};
  const session = await loadSession(file);
  if (session.problems.length === 0 || render.code === 0) {
    const indexer = ToolCallIndexer.fromBranch(session.branch);
    refs = Object.fromEntries(indexer.shortRefToKey);
    nextShortRef = indexer.nextShortRef;
    const shortRefs = Object.keys(refs).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
    const aliasKeys = [...indexer.dedupAliasToOriginal.keys()];
    const aliasedRefs = new Set(aliasKeys.map((k) => indexer.shortRefFor(k)).filter((r): r is string => !!r));
    for (const ref of shortRefs) {
      const record = indexer.getRecord(refs[ref]);
      kinds[ref] = {
        spilled: !!record?.spillPath,
        backfilled: record?.turnIndex === -1,
        aliased: aliasedRefs.has(ref),
        truncated: false,
      };
    }
    if (shortRefs.length > 0) queries.push(shortRefs);
    if (aliasKeys.length > 0) {
      queries.push(aliasKeys);
      // The raw ids of aliased calls: every occurrence, each labelled id@timestamp.
      queries.push([...new Set(aliasKeys.map((k) => parseOccurrenceKey(k).toolCallId))]);
    }
    queries.push([`t${nextShortRef + 1000}`]); // an unknown ref: the tool's "not found" block
  }
  const answers: CliRun[] = [];
  for (const ids of queries) answers.push(await runCli(["query", ...ids, "--format", "tool", "--session", file, "--quiet"], env));
  return { piFile, render, refs, nextShortRef, queries, answers, kinds };
}

/** How `run` is run: whom it writes for (default the extension only), and where the copy it writes lies. */
export interface RunAs {
  target?: "extension" | "pi";
  /** The path of the copy `run` writes (default `<dir>/after/<name>`). */
  afterPath?: (source: string) => string;
}

/**
 * Prepare one session: copies for Pi and for `run`, condense's answers before and after `run`.
 * @param dir a fresh folder for this session's copies (sidecars go beside them)
 */
export async function prepareCase(name: string, source: string, dir: string, env: Record<string, string>, options: RunAs = {}): Promise<OracleCase> {
  mkdirSync(path.join(dir, "before"), { recursive: true });
  const beforeCopy = path.join(dir, "before", path.basename(source));
  copyFileSync(source, beforeCopy);
  // condense reads the original (read-only: a v1/v2 file is migrated in memory); Pi gets a copy.
  const before = await condenseState(source, beforeCopy, env);
  const afterCopy = options.afterPath?.(source) ?? path.join(dir, "after", path.basename(source));
  mkdirSync(path.dirname(afterCopy), { recursive: true });
  const target = options.target ?? "extension";
  copyFileSync(source, afterCopy);
  const run = await runCli(["run", afterCopy, "--migrate", "--target", target, "--quiet"], env);
  const after = run.code === 0 ? await condenseState(afterCopy, afterCopy, env) : null;
  return { name, source, before, after, run };
}

/** A session prepared on condense's side, with what the harness reported: [before run, after run]. */
export interface PreparedSession {
  case: OracleCase;
  pi: HarnessResult[];
}

/**
 * Prepare every session (condense's side, one after the other, in `dir`), then run the harness
 * over all of them in `children` child processes at once; `run` as `runAs` says.
 * @param agentDir Pi's agent folder for both sides (its settings.json switches the extension on)
 * @returns by file name
 */
export async function prepareSuite(sources: string[], dir: string, agentDir: string, children = 1, runAs: RunAs = {}): Promise<Map<string, PreparedSession>> {
  const env = { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: agentDir };
  const cases: OracleCase[] = [];
  for (const source of sources) {
    const name = path.basename(source);
    cases.push(await prepareCase(name, source, path.join(dir, name.replace(/\.jsonl$/, "")), env, runAs));
  }
  const groups = Array.from({ length: children }, (_, g) => cases.filter((_, i) => i % children === g));
  const answers = await Promise.all(groups.map((group) => runHarness(group.flatMap(harnessJobs), agentDir)));
  const out = new Map<string, PreparedSession>();
  groups.forEach((group, g) => {
    let at = 0;
    for (const c of group) {
      const count = harnessJobs(c).length;
      out.set(c.name, { case: c, pi: answers[g].slice(at, at + count) });
      at += count;
    }
  });
  return out;
}

/** The harness jobs of a case: before run, then after run when run wrote the file. */
export function harnessJobs(c: OracleCase): HarnessJob[] {
  const job = (s: CondenseState): HarnessJob => ({
    file: s.piFile,
    queries: s.queries,
    probeRefs: Math.max(0, ...Object.keys(s.refs).map((r) => Number(r.slice(1)))) + 20,
  });
  return c.after ? [job(c.before), job(c.after)] : [job(c.before)];
}

/** Figures of one comparison, summed over the suite. */
export interface Figures {
  contexts: number;
  refs: number;
  queries: number;
  spilled: number;
  backfilled: number;
  aliased: number;
  truncated: number;
}

export const emptyFigures = (): Figures => ({ contexts: 0, refs: 0, queries: 0, spilled: 0, backfilled: 0, aliased: 0, truncated: 0 });

/**
 * Assert that condense and the extension agree on one state: the message array Pi sends equals
 * `render --format json`; the extension's rebuilt refs equal condense's (same occurrence keys)
 * and its next ref number is past every ref condense issued; each context_tree_query text equals
 * `query --format tool`.
 */
export function compareState(label: string, ours: CondenseState, pi: HarnessResult, figures: Figures): void {
  expect(pi.openError, `${label}: Pi could not open the file`).toBeUndefined();
  expect(pi.extensionErrors, `${label}: errors raised by the extension`).toEqual([]);
  expect(ours.render.code, `${label}: render failed: ${ours.render.stderr}`).toBe(0);
  const rendered = JSON.parse(ours.render.stdout) as unknown[];
  expect(rendered.length, `${label}: number of messages`).toBe(pi.messages.length);
  for (let i = 0; i < rendered.length; i++) expect(rendered[i], `${label}: message ${i}`).toStrictEqual(pi.messages[i]);
  figures.contexts++;

  // Refs: the same map both ways, and no number the extension could hand out again.
  expect(pi.refs, `${label}: refs the extension rebuilt`).toStrictEqual(ours.refs);
  expect(pi.liveRefs, `${label}: refs the live extension resolves`).toStrictEqual(ours.refs);
  const highest = Math.max(0, ...Object.keys(ours.refs).map((r) => Number(r.slice(1))));
  expect(pi.nextShortRef, `${label}: the extension's next ref number`).toBeGreaterThan(highest);
  expect(ours.nextShortRef, `${label}: condense's next ref number`).toBeGreaterThanOrEqual(pi.nextShortRef);
  figures.refs += Object.keys(ours.refs).length;

  // context_tree_query, call by call, block by block.
  expect(pi.queries.length).toBe(ours.queries.length);
  ours.queries.forEach((ids, q) => {
    const answer = ours.answers[q];
    const unknown = ids.filter((id) => pi.queries[q].includes(`## toolRef: ${id}\n(not found in index`));
    expect(answer.code, `${label}: query ${ids.slice(0, 3).join(" ")}…: ${answer.stderr}`).toBe(unknown.length > 0 ? 1 : 0);
    expect(answer.stdout.endsWith("\n")).toBe(true);
    const theirs = pi.queries[q].split(TOOL_SEPARATOR);
    const mine = answer.stdout.slice(0, -1).split(TOOL_SEPARATOR);
    expect(mine.length, `${label}: blocks for ${ids.slice(0, 3).join(" ")}…`).toBe(theirs.length);
    for (let b = 0; b < theirs.length; b++) {
      const head = theirs[b].slice(0, theirs[b].indexOf("\n"));
      expect(mine[b] === theirs[b], `${label}: context_tree_query block "${head}" differs from condense query`).toBe(true);
      const ref = /^## toolRef: (t\d+)$/.exec(head)?.[1];
      if (ref && ours.kinds[ref] && theirs[b].includes("\n[Output truncated: ")) ours.kinds[ref].truncated = true;
    }
    figures.queries += theirs.length;
  });
  for (const k of Object.values(ours.kinds)) {
    if (k.spilled) figures.spilled++;
    if (k.backfilled) figures.backfilled++;
    if (k.aliased) figures.aliased++;
    if (k.truncated) figures.truncated++;
  }
}

/** Fixtures Pi cannot use: what Pi says (opening, or building the context), and what condense says. */
export const PI_REFUSES: Record<string, { pi: RegExp; condense: RegExp }> = {
  "bad-bom.jsonl": { pi: /^Session file is not a valid pi session/, condense: /line 1 starts with a UTF-8 byte-order mark/ },
  "bad-no-header.jsonl": { pi: /^Session file is not a valid pi session/, condense: /no session header: the first entry \(line 1, a "message" entry\)/ },
  "bad-not-jsonl.jsonl": { pi: /^Session file is not a valid pi session/, condense: /not a JSONL session: none of its 4 non-blank line\(s\) is a JSON object/ },
  "bad-number-before-header.jsonl": { pi: /^Session file is not a valid pi session/, condense: /no session header: the first entry \(line 1, a JSON number\)/ },
  "bad-null-message.jsonl": {
    pi: /^buildSessionContext: Cannot read properties of null \(reading 'role'\)/,
    condense: /a message entry without a message object at .*:4 \(byte 580\)/,
  },
};
/**
 * A parent cycle: Pi's buildSessionContext walks the cycle until the array it builds cannot grow
 * (RangeError "Invalid array length" after about 6 s and 2.5 GB under Node 22; a fatal crash under
 * Node 20), so it is not handed to Pi here; condense refuses it.
 */
export const CYCLE = "bad-parent-cycle.jsonl";
/** An empty file: Pi opens it as a session without messages; condense refuses it. */
export const EMPTY = "bad-empty.jsonl";
/** Pi skips the cut-off final line and sends the rest; condense renders that too, but will not write to a file that may still be being written. */
export const STILL_WRITTEN = "bad-truncated-final-line.jsonl";

/** The shared session files, and the one Pi refuses (no header): test/helpers.ts's, under the names the oracle suites use. */
export { HEADERLESS_SHARED as HEADERLESS, sharedSessionFiles } from "../helpers.js";

/** The bytes of a file (to check that nothing touched a read-only input). */
export const bytesOf = (file: string): Buffer => readFileSync(file);
