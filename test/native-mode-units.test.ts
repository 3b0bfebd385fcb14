/**
 * Native mode shape by shape (docs/design.md §11), on fixtures/native-mode-shapes.jsonl:
 * five closed chains — the first with a string prompt, the second with text and an image (both
 * compressed: rolling window 3), a summarized result, a failed write with 600 characters of
 * arguments, signed thinking and a `thoughtSignature` (its batch is trivial, so it stays raw and is
 * purged), a result no call answers, and a latest assistant message with signed thinking. The exact
 * context edits `run --target pi` appends, the entry listing them, the target decision, the v1
 * refusal, `render --dry-run --as pi-only`, and what the planner cannot represent.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../src/config/config.js";
import { CONTEXT_EDITS_TYPE } from "../src/entries/types.js";
import { decideTarget } from "../src/pipeline/target.js";
import { ToolCallIndexer } from "../src/prune/indexer.js";
import { protectionTest } from "../src/prune/protect.js";
import { planContextEdits } from "../src/render/context-edits.js";
import type { SessionEntry } from "../src/session/types.js";
import { runCli } from "./cli-harness.js";
import { FIXTURES, HEX8, importPiCompaction, importPiMessages, importPiSessionManager, makeTempDir } from "./helpers.js";
import { piTokens } from "./native-mode/checks.js";

const NOW = "2026-02-01T00:00:00.000Z";
const SHAPES = path.join(FIXTURES, "native-mode-shapes.jsonl");

type Line = Record<string, any>;
const linesOf = (file: string): Line[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));

describe("run --target pi on native-mode-shapes.jsonl", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let file: string;
  let extensionFile: string;
  let appended: Line[];
  let original: Map<string, Line>;
  const env = () => ({ CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") });

  beforeAll(async () => {
    tmp = makeTempDir("native-units");
    file = path.join(tmp.dir, "shapes.jsonl");
    copyFileSync(SHAPES, file);
    extensionFile = path.join(tmp.dir, "shapes-extension.jsonl");
    copyFileSync(SHAPES, extensionFile);
    const run = await runCli(["run", file, "--target", "pi", "--quiet"], env());
    expect(run.code, run.stderr).toBe(0);
    expect((await runCli(["run", extensionFile, "--target", "extension", "--quiet"], env())).code).toBe(0);
    original = new Map(linesOf(SHAPES).map((e) => [e.id, e]));
    appended = linesOf(file).slice(original.size);
  });
  afterAll(() => tmp?.cleanup());

  const edits = () => appended.filter((e) => e.type === "context_edit");
  const editOf = (targetId: string) => edits().find((e) => e.targetId === targetId);
  const content = (id: string) => original.get(id)!.message.content;

  it("edits these targets, replacements first, then omissions, assistant messages last, each as Pi's appendContextEdit writes it", () => {
    const summaries = appended.filter((e) => e.customType === "context-prune-summary").map((e) => e.id);
    expect(summaries).toHaveLength(5);
    // Every prefix of the append is valid for providers (native-mode-torn.test.ts): a tool result
    // is left out before the assistant message that calls it.
    expect(edits().map((e) => [e.targetId, e.replacement === null ? null : "content"])).toEqual([
      ["n0000001", "content"], // chain A's prompt carries its block
      ["n0000006", "content"], // chain A's final reply without thinking
      ["n0000007", "content"], // chain B's prompt carries its block
      ["n000000a", "content"],
      ["n000000d", "content"], // chain C's result: a stub
      ["n0000010", "content"], // the failed write: arguments purged
      ["n0000017", "content"], // chain E's result: a stub
      ["n0000003", null], // chain A's and B's tool results
      ["n0000005", null],
      ["n0000009", null],
      ["n0000018", null], // the result no call answers
      ...summaries.slice(0, 3).map((id) => [id, null]), // chain A's and B's batch summaries
      ["n0000002", null], // chain A's and B's tool calls
      ["n0000004", null],
      ["n0000008", null],
    ]);
    let parent = appended[0].parentId;
    expect(parent).toBe([...original.keys()].at(-1));
    for (const e of appended) {
      if (e.type === "context_edit") expect(Object.keys(e)).toEqual(["type", "id", "parentId", "timestamp", "targetId", "replacement"]);
      expect(e.id).toMatch(HEX8);
      expect([e.parentId, e.timestamp]).toEqual([parent, NOW]);
      parent = e.id;
    }
  });

  it("lists its edits in one condense-context-edits entry right after them", () => {
    const marker = appended[appended.indexOf(edits().at(-1)!) + 1];
    expect(marker).toEqual({
      type: "custom",
      customType: CONTEXT_EDITS_TYPE,
      data: { editIds: edits().map((e) => e.id) },
      id: marker.id,
      parentId: edits().at(-1)!.id,
      timestamp: NOW,
    });
  });

  it("chain starts carry the extension's block, then the recovery command, then the prompt as it was", () => {
    const [a, b] = [editOf("n0000001")!.replacement.content, editOf("n0000007")!.replacement.content];
    expect(a.slice(1)).toEqual([{ type: "text", text: "Read the config files." }]);
    expect(b.slice(1)).toEqual(content("n0000007"));
    for (const [block, id, refs] of [
      [a[0], "b1", "t1 t2"],
      [b[0], "b2", "t3"],
    ]) {
      expect(block.type).toBe("text");
      expect(block.text.startsWith(`<compressed-chain id="${id}" tools="${refs.replace(" ", ",")}">\n`)).toBe(true);
      expect(
        block.text.endsWith(
          `\n\nFull output${refs.includes(" ") ? "s" : ""}: \`condense query ${refs} --session ${file}\` in bash (or context_tree_query).\n</compressed-chain>`,
        ),
      ).toBe(true);
    }
  });

  it("the extension's own render of the same run shows the same blocks, without the recovery command", async () => {
    const r = await runCli(["render", extensionFile, "--as", "extension", "--format", "json", "--quiet"], env());
    const blocks = (JSON.parse(r.stdout) as Line[])
      .filter((m) => m.role === "user" && m.content[0]?.text?.startsWith("<compressed-chain"))
      .map((m) => m.content[0].text);
    const native = [editOf("n0000001")!, editOf("n0000007")!].map((e) =>
      e.replacement.content[0].text.replace(/\n\nFull outputs?: `condense query [^`]+` in bash \(or context_tree_query\)\.\n/, "\n"),
    );
    expect(native).toEqual(blocks);
  });

  it("final replies lose their thinking; the failed write loses only its arguments; stubs name condense query", () => {
    expect(editOf("n0000006")!.replacement).toEqual({ content: [{ type: "text", text: "Config read." }] });
    expect(editOf("n000000a")!.replacement).toEqual({ content: [{ type: "text", text: "It shows a dialog." }] });
    const [thinking, write, text] = content("n0000010");
    expect(editOf("n0000010")!.replacement).toEqual({
      content: [thinking, { ...write, arguments: { _purged: `<purged-errored-args size="${JSON.stringify(write.arguments).length}"/>` } }, text],
    });
    expect(Object.keys(editOf("n0000010")!.replacement.content[1])).toEqual(["type", "id", "name", "arguments", "thoughtSignature"]);
    expect(editOf("n000000d")!.replacement).toEqual({
      content: [
        {
          type: "text",
          text: `[Summarized in pruner summary, ref \`t4\`. Full output: \`condense query t4 --session ${file}\` in bash (or context_tree_query).]`,
        },
      ],
    });
    expect(editOf("n0000017")!.replacement.content[0].text).toContain("`condense query t5 --session ");
    // The latest assistant message, signed thinking and all, is not touched.
    expect(editOf("n000001a")).toBeUndefined();
  });

  it("Pi alone sends what render --as pi-only prints, and what render --dry-run --as pi-only predicted", async () => {
    const Pi = await importPiSessionManager();
    const PiMessages = await importPiMessages();
    const sent = PiMessages.convertToLlm(Pi.SessionManager.open(file).buildSessionContext().messages);
    const r = await runCli(["render", file, "--as", "pi-only", "--format", "json", "--quiet"], env());
    expect(JSON.parse(r.stdout)).toStrictEqual(sent);
    const fresh = path.join(tmp.dir, "dry", "shapes.jsonl");
    mkdirSync(path.dirname(fresh));
    copyFileSync(SHAPES, fresh);
    const dry = await runCli(["render", fresh, "--dry-run", "--target", "pi", "--as", "pi-only", "--json", "--quiet"], env());
    const doc = JSON.parse(dry.stdout);
    expect(doc.target).toEqual({ used: "pi", reason: "--target pi" });
    // The same run at another path names another --session: compare with that swapped.
    expect(JSON.stringify(doc.messages).replaceAll(fresh, file)).toBe(JSON.stringify(sent));
  });
});

describe("metrics: stock Pi's context now → after run, next to the extension's", () => {
  it("predicts what run --target pi leaves stock Pi (Pi's own estimate), and reports nothing left to save afterwards", async () => {
    const tmp = makeTempDir("native-metrics");
    try {
      const file = path.join(tmp.dir, "shapes.jsonl");
      copyFileSync(SHAPES, file);
      // No settings: `run` would write for stock Pi (auto), and metrics plans its "after" that way.
      const env = { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") };
      const { estimateTokens } = await importPiCompaction();
      const renderPiOnly = async () => JSON.parse((await runCli(["render", file, "--as", "pi-only", "--format", "json", "--quiet"], env)).stdout);
      const now = piTokens(estimateTokens, await renderPiOnly());
      const planned = JSON.parse((await runCli(["metrics", file, "--json"], env)).stdout).sessions[0].context;
      expect(planned.piOnly.before.tokens).toBe(now);
      expect(planned.piOnly.reclaimedPct).toBeGreaterThan(50);
      expect(Math.abs(planned.piOnly.reclaimedPct - planned.reclaimedPct)).toBeLessThanOrEqual(5);
      expect((await runCli(["run", file, "--target", "pi", "--quiet"], env)).code).toBe(0);
      expect(piTokens(estimateTokens, await renderPiOnly())).toBe(planned.piOnly.after.tokens);
      const after = JSON.parse((await runCli(["metrics", file, "--json"], env)).stdout).sessions[0].context;
      expect(after.piOnly).toEqual({ before: planned.piOnly.after, after: planned.piOnly.after, reclaimedTokens: 0, reclaimedPct: 0 });
    } finally {
      tmp.cleanup();
    }
  });
});

describe("query after run --target pi", () => {
  it("names the images of a result a stub edit replaced (found in the entry, not in the edited projection)", async () => {
    const tmp = makeTempDir("native-images");
    try {
      const file = path.join(tmp.dir, "img.jsonl");
      copyFileSync(path.join(FIXTURES, "image-in-summarized-result.jsonl"), file);
      const env = { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: path.join(tmp.dir, "agent") };
      expect((await runCli(["run", file, "--target", "pi", "--quiet"], env)).code).toBe(0);
      const stubbed = JSON.stringify(linesOf(file).filter((e) => e.type === "context_edit"));
      expect(stubbed).toContain("[Summarized in pruner summary, ref `t");
      const after = JSON.parse((await runCli(["query", "t1", "--session", file, "--json"], env)).stdout);
      // Where the image is in the session as the user has it (the stub edit leaves none in Pi's projection).
      expect(after.results[0].images).toEqual([{ entryId: "1bb09a92", line: 4, block: 1, mimeType: "image/png", bytes: 70, savedTo: null }]);
    } finally {
      tmp.cleanup();
    }
  });
});

describe("the target run writes for", () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(() => {
    tmp = makeTempDir("native-target");
  });
  afterAll(() => tmp?.cleanup());
  const agentWith = (name: string, settings: unknown) => {
    const dir = path.join(tmp.dir, name);
    mkdirSync(dir);
    if (settings !== undefined) writeFileSync(path.join(dir, "settings.json"), JSON.stringify(settings));
    return dir;
  };

  it("auto: pi unless pi-condense is installed and switched on; an explicit target is taken as given", () => {
    const none = agentWith("none", undefined);
    expect(decideTarget("auto", "/p", none)).toEqual({ used: "pi", reason: `${path.join(none, "settings.json")} does not exist` });
    const on = agentWith("on", { packages: ["npm:pi-condense"], contextPrune: { enabled: true } });
    expect(decideTarget("auto", "/p", on)).toEqual({
      used: "extension",
      reason: `pi-condense is installed (npm:pi-condense in the global packages) and switched on in ${path.join(on, "settings.json")}`,
    });
    const off = agentWith("off", { packages: ["npm:pi-condense"] });
    expect(decideTarget("auto", "/p", off)).toEqual({
      used: "pi",
      reason: `pi-condense is installed (npm:pi-condense in the global packages) but not switched on: ${path.join(off, "settings.json")} has no "contextPrune" object`,
    });
    const orphan = agentWith("orphan", { contextPrune: { enabled: true } });
    expect(decideTarget("auto", "/p", orphan)).toEqual({
      used: "pi",
      reason: `pi-condense is switched on in ${path.join(orphan, "settings.json")} but does not look installed`,
    });
    expect(decideTarget("extension", "/p", none)).toEqual({ used: "extension", reason: "--target extension" });
    expect(decideTarget("pi", "/p", on)).toEqual({ used: "pi", reason: "--target pi" });
  });

  it("a v1 file is refused without --migrate, saying why ids matter; with --migrate it is written", async () => {
    const file = path.join(tmp.dir, "v1.jsonl");
    copyFileSync(path.join(FIXTURES, "v1-with-compaction.jsonl"), file);
    const bytes = readFileSync(file);
    const refused = await runCli(["run", file, "--target", "pi"], { CONDENSE_NOW: NOW });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "Context edits for stock Pi name entries by id, and a v1 file has none: Pi gives its entries new random ids when it rewrites it, so edits written without --migrate would point nowhere.",
    );
    expect(readFileSync(file).equals(bytes)).toBe(true);
    const extension = await runCli(["run", file, "--target", "extension"], { CONDENSE_NOW: NOW });
    expect(extension.stderr).not.toContain("Context edits");
    expect((await runCli(["run", file, "--target", "pi", "--migrate", "--quiet"], { CONDENSE_NOW: NOW })).code).toBe(0);
  });
});

describe("what no context edit can represent", () => {
  it("a migrated v2 hookMessage summary the chain covers is reported, never edited", () => {
    const at = (s: number) => `2026-01-01T00:00:0${s}.000Z`;
    const m = (id: string, parentId: string | null, s: number, message: object): SessionEntry =>
      ({ type: "message", id, parentId, timestamp: at(s), message: { ...message, timestamp: 1767225600000 + s * 1000 } }) as SessionEntry;
    const custom = (id: string, parentId: string, s: number, customType: string, data: object): SessionEntry =>
      ({ type: "custom", id, parentId, timestamp: at(s), customType, data }) as SessionEntry;
    const refs = [{ shortId: "t1", toolCallId: "x1", resultTimestamp: 1767225602000 }];
    const branch: SessionEntry[] = [
      m("u1", null, 1, { role: "user", content: "go" }),
      m("a1", "u1", 1, { role: "assistant", content: [{ type: "toolCall", id: "x1", name: "read", arguments: { path: "f" } }], stopReason: "toolUse" }),
      m("r1", "a1", 2, { role: "toolResult", toolCallId: "x1", toolName: "read", content: [{ type: "text", text: "out" }], isError: false }),
      // What a v2 file's hookMessage summary is after migration: a `custom` role message entry.
      m("h1", "r1", 3, { role: "custom", customType: "context-prune-summary", content: "- `t1` read f", display: false, details: { toolCallRefs: refs } }),
      m("f1", "h1", 4, { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" }),
      m("u2", "f1", 5, { role: "user", content: "next" }),
      m("f2", "u2", 6, { role: "assistant", content: [{ type: "text", text: "ok" }], stopReason: "stop" }),
      custom("i1", "f2", 7, "context-prune-index", {
        toolCalls: [
          {
            toolCallId: "x1",
            toolName: "read",
            args: { path: "f" },
            resultText: "out",
            isError: false,
            turnIndex: 0,
            timestamp: 1,
            resultTimestamp: 1767225602000,
          },
        ],
        backfilled: true,
        refs,
      }),
      custom("c1", "i1", 8, "context-prune-chain", {
        blockId: "b1",
        startUserTimestamp: 1767225601000,
        droppedToolCallIds: ["x1"],
        finalAssistantTimestamp: 1767225604000,
        toolRefs: ["t1"],
        compressedAt: 1767225608000,
        rangeSummaryText: "read f",
      }),
    ];
    const config = defaultConfig();
    const ctx = { indexer: ToolCallIndexer.fromBranch(branch), config, isProtected: protectionTest(config), wording: { target: "pi" as const, recovery: {} } };
    const plan = planContextEdits(branch, ctx, new Set());
    expect(plan.unrepresentable).toEqual([{ entryId: "h1", reason: "a custom message entry cannot be edited" }]);
    expect(plan.edits.map((e) => [e.targetId, e.kind])).toEqual([
      ["u1", "carrier"],
      ["r1", "omit"], // the result before its call (every prefix valid)
      ["a1", "omit"],
    ]);
  });
});

describe("run --target pi --output: the path the stubs name", () => {
  // The fixture's cwd is /work/native: Pi keeps its sessions in <agent>/sessions/--work-native--/.
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(() => {
    tmp = makeTempDir("native-output");
  });
  afterAll(() => tmp?.cleanup());
  const agent = () => path.join(tmp.dir, "agent");
  const piFolder = () => path.join(agent(), "sessions", "--work-native--");
  /** The recovery commands of every stub and chain block the run wrote. */
  const commands = async (input: string, output: string): Promise<string[]> => {
    mkdirSync(path.dirname(input), { recursive: true });
    mkdirSync(path.dirname(output), { recursive: true });
    copyFileSync(SHAPES, input);
    const r = await runCli(["run", input, "--target", "pi", "--output", output, "--force", "--quiet"], { CONDENSE_NOW: NOW, PI_CODING_AGENT_DIR: agent() });
    expect(r.code, r.stderr).toBe(0);
    const text = linesOf(output)
      .filter((e) => e.type === "context_edit" && e.replacement)
      .flatMap((e) => e.replacement.content.map((b: { text?: string }) => b.text ?? ""))
      .join("\n");
    return [...text.matchAll(/`(condense query [^`]+)`/g)].map((m) => m[1]);
  };

  it("a session of Pi's folder written elsewhere (to be moved over the original): no --session, which would name a path about to go", async () => {
    const cmds = await commands(path.join(piFolder(), "s.jsonl"), path.join(tmp.dir, "elsewhere", "pruned.jsonl"));
    expect(cmds).toEqual(["condense query t1 t2", "condense query t3", "condense query t4", "condense query t5"]);
  });

  it("written into Pi's folder from elsewhere: no --session either", async () => {
    const cmds = await commands(path.join(tmp.dir, "outside", "s.jsonl"), path.join(piFolder(), "from-outside.jsonl"));
    expect(cmds).toEqual(["condense query t1 t2", "condense query t3", "condense query t4", "condense query t5"]);
  });

  it("neither in Pi's folder: every command names the output, once per stub or block", async () => {
    const output = path.join(tmp.dir, "out", "pruned.jsonl");
    const cmds = await commands(path.join(tmp.dir, "in", "s.jsonl"), output);
    expect(cmds).toEqual([
      `condense query t1 t2 --session ${output}`,
      `condense query t3 --session ${output}`,
      `condense query t4 --session ${output}`,
      `condense query t5 --session ${output}`,
    ]);
  });
});
