/**
 * The LLM summarizer with pi-ai's faux provider: what the model answers → what `run` appends.
 * Fixture fixtures/llm-three-batches.jsonl: batch 1 (turn 0) = bash `npm test` (failing) + read
 * src/checkout.ts, batch 2 (turn 1) = grep, batch 3 (turn 3) = bash `npm test` (passing).
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  createModels,
  fauxAssistantMessage,
  fauxProvider,
  type AssistantMessage,
  type FauxProviderHandle,
  type FauxResponseFactory,
  type SimpleStreamOptions,
  type TranscriptContext,
} from "@earendil-works/pi-ai";
import { defaultConfig, type PruneConfig } from "../src/config/config.js";
import { RECOVERY_HINT } from "../src/context/vocabulary.js";
import { planRun } from "../src/pipeline/plan.js";
import { sessionView } from "../src/pipeline/view.js";
import { loadSession } from "../src/session/session.js";
import { createLlmSummarizer, type LlmSummarizerOptions } from "../src/summarize/llm.js";
import { batchMessage, BATCH_INSTRUCTIONS, cropMiddle, elisionMarker } from "../src/summarize/prompt.js";
import { SendSlots } from "../src/summarize/slots.js";
import type { Summarizer } from "../src/summarize/types.js";
import { CondenseError } from "../src/util/errors.js";
import { loose } from "./helpers.js";

const FIXTURE = path.resolve(__dirname, "../fixtures/llm-three-batches.jsonl");
const NOW = Date.parse("2026-02-01T00:00:00.000Z");
/** The run's one recovery hint, at the end of its last summary (docs/design.md "Recovery hints"). */
const HINT = `\n\n---\n${RECOVERY_HINT}`;

function userText(context: TranscriptContext): string {
  return context.messages
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("")))
    .join("\n");
}

/** Which fixture batch a request is for. */
function batchOf(context: TranscriptContext): 1 | 2 | 3 {
  const text = userText(context);
  if (text.includes("[[2:read]]")) return 1;
  if (text.includes("[[1:grep]]")) return 2;
  return 3;
}

const GOOD: Record<1 | 2 | 3, string> = {
  1: "- [[1:bash]] `npm test -- checkout` failed: applies discount before tax, Expected: 90.00, Received: 99.00 at src/checkout.ts:42:17\n- [[2:read]] src/checkout.ts: total() applies the discount after the 1.1 tax",
  2: "- [[1:grep]] applyDiscount( is called in 28 modules under src/",
  3: "- [[1:bash]] `npm test`: 32 passed, exit code 0",
};

/** A faux provider whose answers are computed per request (any number of requests). */
function scripted(
  id: string,
  answer: (batch: 1 | 2 | 3, context: TranscriptContext, options: SimpleStreamOptions | undefined) => AssistantMessage,
): FauxProviderHandle {
  const faux = fauxProvider({ provider: id, models: [{ id: "m" }] });
  const factory: FauxResponseFactory = (context, options) => answer(batchOf(context), context, options);
  faux.setResponses(Array.from({ length: 100 }, () => factory));
  return faux;
}

function summarizerFor(primary: FauxProviderHandle, extra: Partial<LlmSummarizerOptions> = {}, fallback?: FauxProviderHandle): Summarizer {
  const models = createModels();
  models.setProvider(primary.provider);
  if (fallback) models.setProvider(fallback.provider);
  return createLlmSummarizer({
    models,
    model: primary.getModel(),
    fallback: fallback?.getModel() ?? null,
    idleTimeoutMs: 5000,
    maxTimeoutMs: 10000,
    retry: { baseDelayMs: 1, maxRetries: 2 },
    ...extra,
  });
}

async function run(summarizer: Summarizer, config: PruneConfig = defaultConfig(), signal?: AbortSignal) {
  const session = await loadSession(FIXTURE);
  return planRun(sessionView(session, config), { summarizer, concurrency: 1, nowMs: NOW, targetPath: FIXTURE, signal });
}

const summaries = (plan: Awaited<ReturnType<typeof run>>) =>
  loose(plan.entries)
    .filter((e) => e.type === "custom_message" && e.customType === "context-prune-summary")
    .map((e) => e.content as string);
const customOf = (plan: Awaited<ReturnType<typeof run>>, type: string) => loose(plan.entries).filter((e) => e.type === "custom" && e.customType === type);

describe("the batch prompt", () => {
  it("serializes calls with labels, indented JSON arguments and status", () => {
    expect(
      batchMessage({
        assistantText: "  Checking.  ",
        calls: [
          { toolName: "bash", args: { command: "ls", timeout: 5 }, resultText: "a.txt\nb.txt", isError: false },
          { toolName: "read", args: { path: "x" }, resultText: "", isError: true },
        ],
      }),
    ).toBe(
      "The agent wrote before making these calls:\nChecking.\n\n<tool-calls>\n" +
        '[[1:bash]] bash\narguments:\n{\n  "command": "ls",\n  "timeout": 5\n}\nresult (ok, 11 characters):\na.txt\nb.txt' +
        "\n\n---\n\n" +
        '[[2:read]] read\narguments:\n{\n  "path": "x"\n}\nresult (error, 0 characters):\n(empty)\n</tool-calls>',
    );
  });

  it("shows a long result as head and tail around an explained elision line", () => {
    const text = "H".repeat(2000) + "M".repeat(500) + "T".repeat(1000);
    expect(cropMiddle(text, { head: 2000, tail: 1000 })).toBe(`${"H".repeat(2000)}\n[… 500 characters omitted …]\n${"T".repeat(1000)}`);
    expect(elisionMarker(12345)).toBe("[… 12,345 characters omitted …]");
    expect(BATCH_INSTRUCTIONS).toContain("[… 12,345 characters omitted …]");
    // a crop must save more than the marker costs
    expect(cropMiddle("x".repeat(10 + 63), { head: 5, tail: 5 })).toBe("x".repeat(73));
    expect(cropMiddle("x".repeat(10 + 64), { head: 5, tail: 5 })).toBe("xxxxx\n[… 64 characters omitted …]\nxxxxx");
    // a surrogate pair straddling a cut stays whole
    expect(cropMiddle(`ab😀${"c".repeat(80)}😀gh`, { head: 3, tail: 3 })).toBe("ab\n[… 82 characters omitted …]\n😀gh");
  });

  it("sends the instructions as the system prompt and the batch as the user message", async () => {
    const seen: TranscriptContext[] = [];
    const faux = scripted("p", (b, context) => {
      seen.push(context);
      return fauxAssistantMessage(GOOD[b]);
    });
    await run(summarizerFor(faux));
    expect(seen).toHaveLength(3);
    const first = seen[0].messages;
    expect(first[0]).toMatchObject({ role: "system", content: BATCH_INSTRUCTIONS });
    expect(userText(seen[0])).toContain('[[1:bash]] bash\narguments:\n{\n  "command": "npm test -- checkout"\n}\nresult (error, 1,131 characters):');
  });
});

describe("label substitution", () => {
  it("turns matching labels into refs, removes wrong numbers and names, leaves fences alone", async () => {
    const answer =
      "- [[1:bash]] tests fail at src/checkout.ts:42:17\n" +
      "- [[3:bash]] a label the batch does not have\n" +
      "- [[2:grep]] the right number with the wrong name\n" +
      "  * [[2:READ]]  the read, case-insensitive name\n" +
      "see **[[1:bash]]** mid-line\n" +
      "```\n[[1:bash]] inside a fence\n```";
    const faux = scripted("p", (b) => fauxAssistantMessage(b === 1 ? answer : GOOD[b]));
    const plan = await run(summarizerFor(faux));
    expect(summaries(plan)[0]).toBe(
      "- `t1` tests fail at src/checkout.ts:42:17\n" +
        "- a label the batch does not have\n" +
        "- the right number with the wrong name\n" +
        "  * `t2` the read, case-insensitive name\n" +
        "see **** mid-line\n" +
        "```\n[[1:bash]] inside a fence\n```",
    );
    expect(summaries(plan)[1]).toBe("- `t3` applyDiscount( is called in 28 modules under src/");
    expect(summaries(plan)[2]).toBe(`- \`t4\` \`npm test\`: 32 passed, exit code 0${HINT}`);
    expect(plan.report.batches).toMatchObject({ captured: 3, summarized: 3, failed: 0 });
    expect(plan.report.summarizer).toBe("p/m");
  });
});

describe("unusable answers", () => {
  it("an empty answer leaves the batch raw and pending; later batches are still written", async () => {
    const faux = scripted("p", (b) => fauxAssistantMessage(b === 1 ? "  \n " : GOOD[b]));
    const plan = await run(summarizerFor(faux));
    expect(plan.report.batches).toMatchObject({ captured: 3, summarized: 2, failed: 1 });
    expect(plan.report.failures).toEqual([{ turnIndex: 0, reason: "unusable: p/m: empty answer" }]);
    expect(summaries(plan)).toEqual([GOOD[2].replace("[[1:grep]]", "`t1`"), GOOD[3].replace("[[1:bash]]", "`t2`") + HINT]);
    // The frontier stays before the failed batch, so the next run captures it again.
    expect(customOf(plan, "context-prune-frontier")).toEqual([]);
    expect(faux.state.callCount).toBe(3); // an unusable answer is not retried
  });

  it("an answer cut at the output limit is unusable", async () => {
    const faux = scripted("p", (b) =>
      b === 2 ? fauxAssistantMessage("- [[1:grep]] applyDiscount( is call", { stopReason: "length" }) : fauxAssistantMessage(GOOD[b]),
    );
    const plan = await run(summarizerFor(faux));
    expect(plan.report.failures).toEqual([{ turnIndex: 1, reason: "unusable: p/m: the answer was cut at the output limit" }]);
    expect(plan.report.batches).toMatchObject({ summarized: 2, failed: 1 });
    const frontier = customOf(plan, "context-prune-frontier")[0].data as Record<string, unknown>;
    expect(frontier).toMatchObject({ lastAttemptedToolCallId: "toolu_02", lastAttemptedTurnIndex: 0, attemptedBatchCount: 1 });
  });

  it("an answer longer than the outputs it replaces is discarded as oversized; the frontier still advances", async () => {
    const long = `- [[1:grep]] ${"every module calls applyDiscount( with its own price. ".repeat(40)}`;
    const faux = scripted("p", (b) => fauxAssistantMessage(b === 2 ? long : GOOD[b]));
    const plan = await run(summarizerFor(faux));
    expect(plan.report.batches).toMatchObject({ summarized: 2, skippedOversized: 1, failed: 0 });
    expect(summaries(plan)).toHaveLength(2);
    expect(summaries(plan)[1]).toBe(`- \`t3\` \`npm test\`: 32 passed, exit code 0${HINT}`);
    const frontier = customOf(plan, "context-prune-frontier")[0].data as Record<string, unknown>;
    expect(frontier).toMatchObject({ lastAttemptedToolCallId: "toolu_04", attemptedBatchCount: 3, outcome: "summarized" });
    expect(plan.report.usage.calls).toBe(3); // the oversized answer was still a model call
  });
});

describe("retries and the outage fallback", () => {
  const unavailable = () => fauxAssistantMessage("", { stopReason: "error", errorMessage: "503 Service Unavailable: overloaded" });

  it("retries a transient failure, then succeeds without a fallback", async () => {
    let failures = 2;
    const faux = scripted("p", (b) => (failures-- > 0 ? unavailable() : fauxAssistantMessage(GOOD[b])));
    const plan = await run(summarizerFor(faux));
    expect(plan.report.batches).toMatchObject({ summarized: 3, failed: 0 });
    expect(faux.state.callCount).toBe(5);
  });

  it("enters the fallback after the primary's retries fail, once, and stays there", async () => {
    const primary = scripted("primary", () => unavailable());
    const backup = scripted("backup", (b) => fauxAssistantMessage(GOOD[b]));
    const notices: string[] = [];
    const plan = await run(summarizerFor(primary, { onNotice: (m) => notices.push(m) }, backup));
    expect(plan.report.batches).toMatchObject({ summarized: 3, failed: 0 });
    expect(primary.state.callCount).toBe(3); // 1 + 2 retries for the first batch, then never again
    expect(backup.state.callCount).toBe(3);
    expect(notices).toEqual([
      "primary/m is failing (primary/m: 503 Service Unavailable: overloaded (3 attempts)); summarizing with backup/m instead, trying primary/m again every 10 min",
    ]);
    expect(summaries(plan)[0]).toBe(GOOD[1].replace("[[1:bash]]", "`t1`").replace("[[2:read]]", "`t2`"));
  });

  it("probes the primary after the cooldown and goes back to it when it answers", async () => {
    let primaryDown = true;
    let clock = 0;
    const primary = scripted("primary", (b) => (primaryDown ? unavailable() : fauxAssistantMessage(GOOD[b])));
    const backup = scripted("backup", (b) => fauxAssistantMessage(GOOD[b]));
    const notices: string[] = [];
    const summarizer = summarizerFor(primary, { onNotice: (m) => notices.push(m), now: () => clock, fallbackCooldownMs: 1000 }, backup);
    const batch = { assistantText: "", calls: [{ toolName: "grep", args: {}, resultText: "x", isError: false }] };
    expect((await summarizer.summarizeBatch(batch)).ok).toBe(true); // primary ×3, backup ×1
    clock = 500;
    expect((await summarizer.summarizeBatch(batch)).ok).toBe(true); // backup
    clock = 1500; // cooldown over, primary still down: probe fails, back to backup
    expect((await summarizer.summarizeBatch(batch)).ok).toBe(true);
    expect([primary.state.callCount, backup.state.callCount]).toEqual([6, 3]);
    primaryDown = false;
    clock = 2000; // only 500 ms since the failed probe
    await summarizer.summarizeBatch(batch);
    expect([primary.state.callCount, backup.state.callCount]).toEqual([6, 4]);
    clock = 2600; // probe succeeds: back on the primary
    await summarizer.summarizeBatch(batch);
    await summarizer.summarizeBatch(batch);
    expect([primary.state.callCount, backup.state.callCount]).toEqual([8, 4]);
    expect(notices[1]).toBe("primary/m answers again; summarizing with it from now on");
  });

  it.each([
    [
      "an auth failure",
      () => fauxAssistantMessage("", { stopReason: "error", errorMessage: "401 Unauthorized: invalid x-api-key" }),
      "auth: primary/m: 401 Unauthorized: invalid x-api-key",
      1,
    ],
    ["an empty answer", () => fauxAssistantMessage(""), "unusable: primary/m: empty answer", 1],
    [
      "an answer cut at length",
      () => fauxAssistantMessage("- [[1:bash]] te", { stopReason: "length" }),
      "unusable: primary/m: the answer was cut at the output limit",
      1,
    ],
  ])("does not enter the fallback on %s", async (_what, answer, reason, primaryCalls) => {
    const primary = scripted("primary", () => answer());
    const backup = scripted("backup", (b) => fauxAssistantMessage(GOOD[b]));
    const notices: string[] = [];
    const summarizer = summarizerFor(primary, { onNotice: (m) => notices.push(m) }, backup);
    const result = await summarizer.summarizeBatch({ assistantText: "", calls: [{ toolName: "bash", args: {}, resultText: "x", isError: false }] });
    expect(result).toMatchObject({ ok: false });
    expect(result.ok ? "" : `${result.kind}: ${result.reason}`).toBe(reason);
    expect(primary.state.callCount).toBe(primaryCalls);
    expect(backup.state.callCount).toBe(0);
    expect(notices).toEqual([]);
  });

  it("a failing fallback reports both reasons and the batch stays raw", async () => {
    const primary = scripted("primary", () => unavailable());
    const backup = scripted("backup", () => fauxAssistantMessage("", { stopReason: "error", errorMessage: "500 internal error" }));
    const plan = await run(summarizerFor(primary, {}, backup));
    expect(plan.report.batches).toMatchObject({ summarized: 0, failed: 3 });
    expect(plan.report.failures[0].reason).toBe(
      "transient: primary/m: 503 Service Unavailable: overloaded (3 attempts); fallback backup/m: 500 internal error (3 attempts)",
    );
    expect(plan.entries).toEqual([]);
  });
});

describe("options and cancellation", () => {
  it("a request that waits for its send slot inside the client gets an SDK timeout that covers the wait", async () => {
    const seen: (number | undefined)[] = [];
    const faux = scripted("p", (b, _c, options) => {
      seen.push(options?.timeoutMs);
      return fauxAssistantMessage(GOOD[b]);
    });
    const models = createModels();
    models.setProvider(faux.provider);
    // A client whose requests wait for their slot at send (as condense's HTTP client does).
    const queuing = { streamSimple: models.streamSimple.bind(models), queuesAtSend: () => true };
    const batch = { assistantText: "", calls: [{ toolName: "bash", args: {}, resultText: "x", isError: false }] };
    const at = (maxTimeoutMs: number) =>
      createLlmSummarizer({ models: queuing, model: faux.getModel(), idleTimeoutMs: 5000, maxTimeoutMs, retry: { maxRetries: 0 } });
    await at(10_000).summarizeBatch(batch, undefined, new SendSlots(2));
    await at(300_000).summarizeBatch(batch, undefined, new SendSlots(2));
    // Without slots the SDK keeps its own default (nothing passed).
    await at(300_000).summarizeBatch(batch);
    expect(seen).toEqual([600_000, 1_200_000, undefined]);
  });

  it.each([
    ["default", undefined],
    ["off", undefined],
    ["high", "high"],
    ["minimal", "minimal"],
  ] as const)("thinking %s → reasoning %s", async (thinking, expected) => {
    const seen: (string | undefined)[] = [];
    const faux = scripted("p", (b, _c, options) => {
      seen.push(options?.reasoning);
      return fauxAssistantMessage(GOOD[b]);
    });
    await summarizerFor(faux, { thinking }).summarizeBatch({ assistantText: "", calls: [{ toolName: "bash", args: {}, resultText: "x", isError: false }] });
    expect(seen).toEqual([expected]);
  });

  it("usage of every call reaches the stats entry and the report (cost: see llm-http.test.ts)", async () => {
    const usages: { input: number; output: number }[] = [];
    const faux = scripted("p", (b) => fauxAssistantMessage(GOOD[b]));
    const summarizer = summarizerFor(faux);
    const counting: Summarizer = {
      ...summarizer,
      name: summarizer.name,
      local: false,
      summarizeBatch: async (batch, signal) => {
        const r = await summarizer.summarizeBatch(batch, signal);
        if (r.usage) usages.push(r.usage);
        return r;
      },
      fuseRange: (bodies, signal) => summarizer.fuseRange(bodies, signal),
    };
    const plan = await run(counting);
    const input = usages.reduce((n, u) => n + u.input, 0);
    const output = usages.reduce((n, u) => n + u.output, 0);
    expect(usages).toHaveLength(3);
    expect(input).toBeGreaterThan(0);
    expect(plan.report.usage).toEqual({ input, output, cost: 0, calls: 3, reused: { cache: 0, session: 0 } });
    expect(customOf(plan, "context-prune-stats")[0].data).toEqual({
      totalInputTokens: input,
      totalOutputTokens: output,
      totalCost: 0,
      callCount: 3,
      chainsCompressed: 0,
      rangesSummarized: 0,
    });
  });

  it("an abort ends the run with exit 130 and nothing planned", async () => {
    const controller = new AbortController();
    const faux = scripted("p", (b) => {
      if (b === 2) controller.abort();
      return fauxAssistantMessage(GOOD[b]);
    });
    const error = await run(summarizerFor(faux), defaultConfig(), controller.signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CondenseError);
    expect((error as CondenseError).exitCode).toBe(130);
  });

  it("an aborted call is reported as aborted, not retried and not sent to the fallback", async () => {
    const controller = new AbortController();
    controller.abort();
    const primary = scripted("primary", (b) => fauxAssistantMessage(GOOD[b]));
    const backup = scripted("backup", (b) => fauxAssistantMessage(GOOD[b]));
    const result = await summarizerFor(primary, {}, backup).summarizeBatch(
      { assistantText: "", calls: [{ toolName: "bash", args: {}, resultText: "x", isError: false }] },
      controller.signal,
    );
    expect(result).toEqual({ ok: false, kind: "aborted", reason: "aborted" });
    expect(primary.state.callCount + backup.state.callCount).toBe(0);
  });

  it("fuses range summaries through the same path, without the recovery hint", async () => {
    let seen = "";
    const faux = scripted("p", (_b, context) => {
      seen = userText(context);
      return fauxAssistantMessage("Found the discount bug (`t1`, `t2`) and fixed it (`t4`).");
    });
    const footer = "\n\n---\nAlso pruned here: `t2`.";
    const result = await summarizerFor(faux).fuseRange([`- \`t1\` a${footer}\n${RECOVERY_HINT}`, `- \`t4\` b${HINT}`]);
    expect(result).toEqual({ ok: true, text: "Found the discount bug (`t1`, `t2`) and fixed it (`t4`).", usage: expect.any(Object), model: "p/m" });
    expect(seen).toBe(`<step-summaries>\n- \`t1\` a${footer}\n\n- \`t4\` b\n</step-summaries>`);
  });
});
