/**
 * Shapes shared by `pruneMessages` and its four phases (docs/design.md §7): what a phase gets, what
 * it returns, and the diagnostics a render finds.
 */
import type { PruneConfig } from "../config/config.js";
import type { ToolCallIndexer } from "../prune/indexer.js";
import type { ProtectionTest } from "../prune/protect.js";
import type { DiagnosticData } from "../entries/types.js";
import type { StubWording } from "../context/vocabulary.js";
import type { AgentMessage } from "../session/types.js";

/** What every phase may read: the index rebuilt from the branch, the configuration, the protection test. */
export interface PruneContext {
  indexer: ToolCallIndexer;
  config: PruneConfig;
  isProtected: ProtectionTest;
  /** Whose stub and chain-block texts (default the extension's: what it sends). */
  wording?: StubWording;
  /**
   * What a failed result's error purge takes: the arguments of every call with its bare id (`id`,
   * the extension's rule and the default), or of the call it answers (`occurrence`, for stock Pi's
   * context edits: render/error-purge.ts `purgeErroredArgsByOccurrence`).
   */
  errorPurge?: "id" | "occurrence";
  /**
   * Timestamps of the user and assistant messages Pi's latest compaction left out of the context
   * (`context/projection.ts` `compactedMessageTimestamps`): a chain range starting or ending there
   * is behind the compaction, not a fault — nothing of it is left to prune, and no diagnostic says so.
   */
  behindCompaction?: ReadonlySet<number>;
}

export type PhaseName = "stub-replace" | "error-purge" | "chain-range-prune" | "orphan-sweep";

export interface PhaseResult {
  phase: PhaseName;
  messages: AgentMessage[];
}

/** A diagnostic found while rendering, with the key it is deduplicated by (docs/design.md "Diagnostics"). */
export interface RenderDiagnostic extends DiagnosticData {
  dedupKey: string;
}

export interface PruneResult {
  /** The final messages: the input array itself when nothing changed. */
  messages: AgentMessage[];
  /**
   * Where each final message came from, parallel to `messages`: the index of the input message it
   * is (or was made from), or null for a message the render inserted (a `<compressed-chain>` block).
   */
  origins: (number | null)[];
  /** Each phase's output, in order. */
  phases: PhaseResult[];
  /** Deduplicated per (kind, dedupKey), in the order found. */
  diagnostics: RenderDiagnostic[];
  /** Texts of the protected outputs the chain phase moved into compressed-chain blocks. */
  relocated: ReadonlySet<string>;
}
