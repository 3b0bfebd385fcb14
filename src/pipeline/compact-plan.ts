/**
 * One session → the compaction entry to append (`condense compact`; docs/design.md §10). Pure
 * apart from the summary function it is given: prepare as Pi does, check the trigger when
 * `--if-over` asks for it, summarize (zero-model or model), append Pi's file tags, build the entry
 * after the leaf, and measure the context before and after with Pi's own estimate.
 */
import { getCurrentSystemMessage, type Usage } from "@earendil-works/pi-ai";
import { estimateProjectedContextTokens } from "../compact/estimate.js";
import { computeFileLists, formatFileOperations } from "../compact/file-ops.js";
import { prepareCompaction, type CompactionPreparation } from "../compact/prepare.js";
import type { CompactionSettings } from "../compact/settings.js";
import { checkTrigger, type TriggerCheck } from "../compact/trigger.js";
import { projectEntries } from "../context/projection.js";
import { contextSize, type ContextViews } from "../context/size.js";
import { renderBranch } from "../render/render.js";
import { compactionEntry } from "../entries/build.js";
import type { CompactionDetails, CompactionEntry } from "../session/types.js";
import { chainEntries } from "../session/writer.js";
import type { SessionView } from "./view.js";

/** Turns a preparation into summary text (without file tags) and the usage it cost. */
export type SummarizeFn = (prep: CompactionPreparation) => Promise<{ text: string; usage?: Usage }>;

export interface CompactionPlanOptions {
  settings: CompactionSettings;
  summarize: SummarizeFn;
  /** The session model's context window (tokens), or null when unknown. */
  contextWindow: number | null;
  /** `--if-over`: `"pi"` for Pi's own trigger, a number for that fraction of the window; absent = always compact. */
  ifOver?: "pi" | number;
  customInstructions?: string;
  /** The entry's timestamp (ISO). */
  nowIso: string;
}

export type CompactionStatus = "compacted" | "already-compacted" | "nothing-to-compact" | "below-trigger" | "unknown-window";

/** What `compact` found and would append for one session. */
export interface CompactionPlan {
  status: CompactionStatus;
  /** Why nothing is appended (Pi's words where it has them). */
  reason: string | null;
  settings: CompactionSettings;
  trigger: TriggerCheck;
  preparation: CompactionPreparation | null;
  /** The `compaction` entry, placed after the leaf (id, parent, timestamp), or null. */
  entry: CompactionEntry<CompactionDetails> | null;
  /** Pi's estimate of the context (tokens; `estimateProjectedContextTokens`, what its trigger compares) now, and after the entry is appended (= before when nothing is). */
  piEstimate: { before: number; after: number };
  /**
   * The context Pi sends (`context/size.ts`, the one measure every command reports) now and after
   * the entry: with the extension's phases (`before`, `after`), and as stock Pi sends it (`piOnly`).
   */
  context: ContextViews;
  usage: Usage | null;
}

/** Why a session below the `--if-over` level is left alone. */
function belowTriggerReason(trigger: TriggerCheck, settings: CompactionSettings, fraction: number | undefined): string {
  if (fraction === undefined && !settings.enabled) return "auto-compaction is off (compaction.enabled: false), so Pi would not compact it";
  const level = Math.floor(trigger.level ?? 0).toLocaleString("en-US");
  // Pi's own trigger estimate (the last reported usage plus what follows it), which can differ
  // from the context figure of the tables (every message estimated): named as Pi's.
  return `Pi's estimate ${trigger.contextTokens.toLocaleString("en-US")} tokens ≤ ${level} (${fraction === undefined ? "window − reserveTokens" : `${fraction} × window`})`;
}

/**
 * Plan the compaction of one session.
 * @throws whatever `options.summarize` throws (a failed model request): nothing is planned then
 */
export async function planCompaction(view: SessionView, options: CompactionPlanOptions): Promise<CompactionPlan> {
  const { settings } = options;
  const { branch } = view;
  const projected = view.context.projected;
  const fraction = typeof options.ifOver === "number" ? options.ifOver : undefined;
  const trigger = checkTrigger(branch, projected, options.contextWindow, settings, fraction);
  const before = trigger.contextTokens;
  const sentNow = { extension: contextSize(view.rendered.afterAgent), piOnly: contextSize(view.rendered.beforeAgent) };
  const idle = (status: CompactionStatus, reason: string, preparation: CompactionPreparation | null = null): CompactionPlan => ({
    status,
    reason,
    settings,
    trigger,
    preparation,
    entry: null,
    piEstimate: { before, after: before },
    context: { before: sentNow.extension, after: sentNow.extension, piOnly: { before: sentNow.piOnly, after: sentNow.piOnly } },
    usage: null,
  });

  const prepared = prepareCompaction(branch, settings, projected);
  if (typeof prepared === "string") return idle(prepared === "Already compacted" ? "already-compacted" : "nothing-to-compact", prepared);
  if (options.ifOver !== undefined && !trigger.over) {
    if (trigger.over === null) return idle("unknown-window", "the session's context window is unknown (pass --context-window N)", prepared);
    return idle("below-trigger", belowTriggerReason(trigger, settings, fraction), prepared);
  }

  const { text, usage } = await options.summarize(prepared);
  const details = computeFileLists(prepared.fileOps);
  const summary = text + formatFileOperations(details.readFiles, details.modifiedFiles);
  const payload = compactionEntry(
    { summary, firstKeptEntryId: prepared.firstKeptEntryId, tokensBefore: prepared.tokensBefore, details, usage },
    {
      systemMessage: getCurrentSystemMessage(projected.flatMap((e) => e.messages)),
      timestampMs: Date.parse(options.nowIso),
      customInstructions: options.customInstructions,
    },
  );
  const [entry] = chainEntries(view.session, [payload], options.nowIso);
  const after = [...branch, entry];
  const rendered = renderBranch(after, view.config);
  return {
    status: "compacted",
    reason: null,
    settings,
    trigger,
    preparation: prepared,
    entry,
    piEstimate: { before, after: estimateProjectedContextTokens(projectEntries(after), after).tokens },
    context: {
      before: sentNow.extension,
      after: contextSize(rendered.afterAgent),
      piOnly: { before: sentNow.piOnly, after: contextSize(rendered.beforeAgent) },
    },
    usage: usage ?? null,
  };
}
