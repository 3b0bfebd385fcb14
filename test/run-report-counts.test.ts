/**
 * The human report of `condense run` writes its counts as README "Tables" says: with their
 * thousands separators in every cell (the skipped t/d/o cell too), and a noun in the number its
 * count takes (`1 chain block`, `2 chain blocks`).
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { failedBatchesLine } from "../src/cli/run-report.js";
import type { RunFileResult } from "../src/pipeline/run.js";
import { copyInto, fixture, runCliWith, SHARED_SESSIONS, tempDir } from "./cli-capture.js";

const NOW = { CONDENSE_NOW: "2026-02-01T00:00:00.000Z", COLUMNS: "200" };
const tmp = tempDir("run-report-counts");
afterAll(() => tmp.cleanup());

/** A v3 session of one prompt and `count` turns of one `echo i` call each (a trivial batch each), then a reply. */
function manyTrivialTurns(file: string, count: number): void {
  const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  const lines: unknown[] = [{ type: "session", version: 3, id: "0199c0de-0000-7000-8000-0000000c0001", timestamp: "2026-01-01T10:00:00.000Z", cwd: "/x" }];
  let parentId: string | null = null;
  let at = Date.parse("2026-01-01T10:00:00.000Z");
  const add = (message: Record<string, unknown>) => {
    const id = (lines.length + 1).toString(16).padStart(8, "0");
    at += 1000;
    lines.push({ type: "message", id, parentId, timestamp: new Date(at).toISOString(), message: { ...message, timestamp: at } });
    parentId = id;
  };
  const assistant = { api: "anthropic-messages", provider: "anthropic", model: "m", usage };
  add({ role: "user", content: [{ type: "text", text: "check each item" }] });
  for (let i = 1; i <= count; i++) {
    add({
      role: "assistant",
      content: [{ type: "toolCall", id: `call_${i}`, name: "bash", arguments: { command: `echo ${i}` } }],
      ...assistant,
      stopReason: "toolUse",
    });
    add({ role: "toolResult", toolCallId: `call_${i}`, toolName: "bash", content: [{ type: "text", text: String(i) }], isError: false });
  }
  add({ role: "assistant", content: [{ type: "text", text: "done" }], ...assistant, stopReason: "stop" });
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
}

describe("run's report: counts grouped, nouns in their number", () => {
  it("the skipped t/d/o cell groups its counts as the batches cell does: 1,234/0/0", async () => {
    const file = path.join(tmp.dir, "many-trivial.jsonl");
    manyTrivialTurns(file, 1234);
    const r = await runCliWith(NOW, "run", file, "--dry-run");
    expect(r.code, r.stderr).toBe(0);
    const row = r.stdout.split("\n").find((l) => l.includes("check each item")) ?? "";
    const cells = row.split("│").map((c) => c.trim());
    // batches, summarized, skipped t/d/o, spilled, chains
    expect(cells.slice(2, 7)).toEqual(["1,234", "0", "1,234/0/0", "0", "0"]);
  });

  it("context edits: one chain block, one context edit, one stub in the singular; none and several in the plural", async () => {
    const one = await runCliWith(NOW, "run", fixture("protected-chains.jsonl"), "--dry-run");
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.replace(/\s+/g, " ")).toContain(" · 6 context edits (0 stubs, 1 assistant, 1 chain block, 4 omitted)");
    const single = await runCliWith(NOW, "run", fixture("chain-partly-summarized.jsonl"), "--dry-run");
    expect(single.code, single.stderr).toBe(0);
    expect(single.stdout.replace(/\s+/g, " ")).toContain(" · 1 context edit (1 stub, 0 assistant, 0 chain blocks, 0 omitted)");
    const several = await runCliWith(NOW, "run", fixture("five-closed-chains.jsonl"), "--dry-run");
    expect(several.stdout.replace(/\s+/g, " ")).toContain(" · 15 context edits (1 stub, 2 assistant, 2 chain blocks, 10 omitted)");
  });

  it("failed calls left raw for error purge: '1 failed call … its arguments', '2 failed calls … their arguments'", async () => {
    const line = async (name: string) => {
      const file = copyInto(tmp.dir, path.join(SHARED_SESSIONS, name));
      const r = await runCliWith({ ...NOW, PI_CODING_AGENT_DIR: tmp.dir }, "run", file, "--dry-run");
      return r.stdout.split("\n").find((l) => l.includes("left raw"));
    };
    expect(await line("gjc-04-awesome-agent-ide.v3.jsonl")).toMatch(
      /: 1 failed call left raw: error purge takes its arguments, which a stub would bring back$/,
    );
    expect(await line("gjc-02-inline-agent-design.v3.jsonl")).toMatch(
      /: 2 failed calls left raw: error purge takes their arguments, which a stub would bring back$/,
    );
  });

  it("the failed-batches line: '1 of 1 batch failed', '2 of 3 batches failed'", () => {
    const result = (failed: number, captured: number) =>
      ({ session: "s.jsonl", batches: { failed, captured }, failures: [{ reason: "HTTP 500" }], written: null, dryRun: false }) as unknown as RunFileResult;
    expect(failedBatchesLine(result(1, 1))).toMatch(/^s\.jsonl: 1 of 1 batch failed \(/);
    expect(failedBatchesLine(result(2, 3))).toMatch(/^s\.jsonl: 2 of 3 batches failed \(/);
  });
});
