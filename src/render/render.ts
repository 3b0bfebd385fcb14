/**
 * Rendering a session: Pi's projection of the active branch, `pruneMessages` as Pi runs the
 * extension's `context` handler (without the system messages, which Pi puts back), then the
 * conversion to what pi-ai receives.
 */
import type { PruneConfig } from "../config/config.js";
import { type BranchContext, compactedMessageTimestamps, convertToLlm, projectBranch, type ContextItem } from "../context/projection.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import { protectionTest } from "../prune/protect.js";
import type { AgentMessage, Message, SessionEntry } from "../session/types.js";
import { handlerView, restoreSystemMessages } from "./context-event.js";
import { pruneMessages } from "./prune-messages.js";
import type { PruneContext, PruneResult, RenderDiagnostic } from "./types.js";

export interface Rendered {
  /** The context without pruning: what stock Pi sends (its projection, converted). */
  before: Message[];
  /** The same before `convertToLlm` (Pi's own roles kept: for the transcript, and what Pi's estimate counts). */
  beforeAgent: AgentMessage[];
  /** The context after pruning. */
  after: Message[];
  /** The context after pruning, before `convertToLlm` (Pi's own roles kept, for the transcript). */
  afterAgent: AgentMessage[];
  /** Messages after each phase (converted, and before conversion). */
  phases: { phase: string; messages: Message[]; agentMessages: AgentMessage[] }[];
  diagnostics: RenderDiagnostic[];
  /**
   * What the extension's `context` handler saw and answered: the projected items without system
   * messages (aligned with `pruned.phases[i].messages` for the index-preserving phases 1 and 2),
   * and `pruneMessages`' result on them (absent for `render --as pi-only`, which prunes nothing).
   */
  handler?: { items: ContextItem[]; pruned: PruneResult };
}

/**
 * Render a branch (root → leaf, including any entries a run would append).
 * @param indexer the index rebuilt from that branch (built when omitted)
 * @param context Pi's projection of that branch, when the caller has it (`extendContext`; else projected here)
 */
export function renderBranch(branch: SessionEntry[], config: PruneConfig, indexer?: ToolCallIndexer, context?: BranchContext): Rendered {
  return renderItems(context?.items ?? projectBranch(branch), {
    indexer: indexer ?? ToolCallIndexer.fromBranch(branch),
    config,
    isProtected: protectionTest(config),
    behindCompaction: compactedMessageTimestamps(branch),
  });
}

/**
 * Render projected context items: `pruneMessages`, then the conversion to what pi-ai receives.
 * @param items Pi's projection of the branch (`projectContext(branch).items`)
 * @param ctx the index of that branch, the configuration and its protection test
 */
export function renderItems(items: ContextItem[], ctx: PruneContext): Rendered {
  const projected = items.map((i) => i.message);
  // As in Pi: the extension's handler sees the context without system messages, and Pi puts them
  // back (collapsed into one leading message once anything changed) — see context-event.ts.
  const visible = handlerView(projected);
  const pruned = pruneMessages(visible, ctx);
  const { messages, phases, diagnostics } = pruned;
  const sent = restoreSystemMessages(projected, visible, messages);
  // The converted lists are made when first read: most commands read one of them, or none.
  const rendered = {
    beforeAgent: projected,
    afterAgent: sent,
    phases: phases.map((p) =>
      lazily({ phase: p.phase, agentMessages: restoreSystemMessages(projected, visible, p.messages) }, "messages", (x) => convertToLlm(x.agentMessages)),
    ),
    diagnostics,
    handler: { items: visible === projected ? items : items.filter((i) => i.message.role !== "system"), pruned },
  };
  return lazily(
    lazily(rendered, "before", () => convertToLlm(projected)),
    "after",
    () => convertToLlm(sent),
  );
}

/** `target` with a property `key` computed by `make` when first read, then kept. */
function lazily<T extends object, K extends string, V>(target: T, key: K, make: (target: T) => V): T & Record<K, V> {
  let value: V | undefined;
  let made = false;
  return Object.defineProperty(target, key, {
    enumerable: true,
    get: () => {
      if (!made) {
        value = make(target);
        made = true;
      }
      return value as V;
    },
  }) as T & Record<K, V>;
}
