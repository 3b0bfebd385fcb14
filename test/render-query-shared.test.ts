/**
 * Every shared real session, after `run` (v1/v2 files with --migrate, on a temp copy):
 * - `render --format json` has no orphan tool result and no call without a result that the
 *   unpruned projection did not already have — checked with pi-ai's own `transformMessages`,
 *   which inserts a "No result provided" error for each unanswered call;
 * - `query --full --json` on every short ref returns the original output byte for byte;
 * - a second `run` appends nothing (new diagnostics are recorded once).
 * A file `run` refuses to write (gjc-01 has no header) is checked on the in-memory plan instead,
 * which is what `render --dry-run` shows.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { resultTextOf } from "../src/prune/capture.js";
import { parseOccurrenceKey } from "../src/context/vocabulary.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { planRun } from "../src/pipeline/plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { lookupRef, recordBody } from "../src/query/query.js";
import { renderBranch } from "../src/render/render.js";
import { loadSession, type Session } from "../src/session/session.js";
import type { Message, ToolResultMessage } from "../src/session/types.js";
import { deterministicSummarizer } from "../src/summarize/deterministic.js";
import { copyTo, providerFaults, piTransform, runCli, SHARED_SESSIONS, tempDir } from "./render-support.js";

const present = existsSync(SHARED_SESSIONS);
const files = present
  ? readdirSync(SHARED_SESSIONS)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()
  : [];
const NOW = "2026-02-01T00:00:00.000Z";
const env = { CONDENSE_NOW: NOW };

/** Ids of the calls pi-ai had to answer with a synthetic result, sorted. */
function syntheticIds(messages: Message[]): string[] {
  const input = new Set<unknown>(messages);
  return piTransform(messages)
    .filter((m): m is ToolResultMessage => m.role === "toolResult" && !input.has(m))
    .map((m) => m.toolCallId)
    .sort();
}

/** The original text of the tool result an occurrence key names, from the unpruned session. */
function originalOutput(session: Session, key: string): string | undefined {
  const { toolCallId, resultTimestamp } = parseOccurrenceKey(key);
  for (const entry of session.branch) {
    if (entry.type !== "message") continue;
    const m = entry.message as ToolResultMessage;
    if (m.role === "toolResult" && m.toolCallId === toolCallId && m.timestamp === resultTimestamp) return resultTextOf(m);
  }
  return undefined;
}

function expectNoNewFaults(before: Message[], after: Message[], label: string) {
  const b = providerFaults(before);
  const a = providerFaults(after);
  expect(a.orphans, `${label}: orphan tool results after pruning`).toBe(0);
  expect(a.synthetic, `${label}: calls without a result (pi-ai "No result provided")`).toBeLessThanOrEqual(b.synthetic);
  const beforeIds = syntheticIds(before);
  for (const id of syntheticIds(after)) expect(beforeIds, `${label}: ${id} newly unanswered`).toContain(id);
}

describe.skipIf(!present)("shared sessions after run: render and query", () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => (tmp = tempDir("shared-render")));
  afterAll(() => tmp.cleanup());

  /** Short refs checked per session (so the byte-for-byte check cannot pass vacuously). */
  const checkedRefs = new Map<string, number>();

  for (const name of files) {
    it(name, async () => {
      const file = copyTo(tmp.dir, path.join(SHARED_SESSIONS, name));
      const original = await loadSession(file);
      const config = defaultConfig();
      const before = renderBranch(original.branch, config).before;
      const bytes = readFileSync(file);

      const run = await runCli(["run", file, "--migrate", "--quiet"], env);
      if (run.code !== 0) {
        // Only a file Pi itself refuses to open is refused, and then nothing is written.
        expect(
          original.problems.map((p) => p.kind),
          run.stderr,
        ).toContain("missing-header");
        expect(run.code).toBe(2);
        expect(readFileSync(file).equals(bytes)).toBe(true);
        const plan = await planRun(sessionView(original, config), {
          summarizer: deterministicSummarizer,
          concurrency: 4,
          nowMs: Date.parse(NOW),
          targetPath: file,
        });
        expectNoNewFaults(before, renderBranch(plan.afterBranch, config).after, name);
        const sidecars = new Map(plan.sidecars.map((s) => [s.path, s.text]));
        const indexer = ToolCallIndexer.fromBranch(plan.afterBranch);
        for (const ref of indexer.shortRefToKey.keys()) {
          const [hit] = lookupRef(indexer, ref).hits;
          const body = recordBody(hit.record, hit.record.spillPath ? [hit.record.spillPath] : [], (p) => {
            if (!sidecars.has(p)) throw new Error("missing");
            return sidecars.get(p)!;
          });
          expect(body.text, `${name} ${ref}`).toBe(originalOutput(original, hit.key));
          checkedRefs.set(name, (checkedRefs.get(name) ?? 0) + 1);
        }
        return;
      }

      // render --format json: the message array the provider would receive.
      const rendered = await runCli(["render", file, "--format", "json", "--quiet"]);
      expect(rendered.code).toBe(0);
      const after = JSON.parse(rendered.stdout) as Message[];
      expectNoNewFaults(before, after, name);

      // query every short ref: the original output, byte for byte.
      const pruned = await loadSession(file);
      const indexer = ToolCallIndexer.fromBranch(pruned.branch);
      const refs = [...indexer.shortRefToKey.keys()];
      if (refs.length > 0) {
        const q = await runCli(["query", ...refs, "--full", "--json", "--session", file]);
        expect(q.code, q.stderr).toBe(0);
        const doc = JSON.parse(q.stdout) as { results: { ref: string; key: string; output: string; truncated: unknown }[]; unknown: unknown[] };
        expect(doc.unknown).toEqual([]);
        expect(doc.results.map((r) => r.ref)).toEqual(refs);
        for (const r of doc.results) {
          const expected = originalOutput(original, r.key);
          expect(expected, `${name} ${r.ref}: original result for ${r.key}`).toBeTypeOf("string");
          expect(r.output === expected, `${name} ${r.ref} (${r.key}) differs from the original output`).toBe(true);
          expect(r.truncated).toBeNull();
        }
      }
      checkedRefs.set(name, refs.length);

      // A second run appends nothing.
      const once = readFileSync(file);
      expect((await runCli(["run", file, "--quiet"], env)).code).toBe(0);
      expect(readFileSync(file).equals(once), `${name}: second run changed the file`).toBe(true);
    });
  }

  it("checked real refs in the sessions that have tool output to prune", () => {
    for (const name of ["trl-session.v3.jsonl", "pimono-large-session.v1.jsonl", "kimchi-session.v3.jsonl", "gjc-01-youtube-transcript-extraction.v3.jsonl"]) {
      expect(checkedRefs.get(name), name).toBeGreaterThan(10);
    }
    console.log(`query checked byte for byte: ${[...checkedRefs.values()].reduce((a, b) => a + b, 0)} refs in ${checkedRefs.size} sessions`);
  });
});
