/**
 * Rendering a session: Pi's projection of the active branch, `pruneMessages`, then the conversion
 * to what pi-ai receives.
 */
import type { PruneConfig } from "../config/config.js";
import { convertToLlm, projectBranch } from "../context/projection.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import { protectionTest } from "../prune/protect.js";
import type { AgentMessage, Message, SessionEntry } from "../session/types.js";
import { pruneMessages, type RenderDiagnostic } from "./prune-messages.js";

export interface Rendered {
  /** The context without pruning. */
  before: Message[];
  /** The context after pruning. */
  after: Message[];
  /** The context after pruning, before `convertToLlm` (Pi's own roles kept, for the transcript). */
  afterAgent: AgentMessage[];
  /** Messages after each phase (converted). */
  phases: { phase: string; messages: Message[] }[];
  diagnostics: RenderDiagnostic[];
}

/**
 * Render a branch (root → leaf, including any entries a run would append).
 * @param indexer the index rebuilt from that branch (built when omitted)
 */
export function renderBranch(branch: SessionEntry[], config: PruneConfig, indexer?: ToolCallIndexer): Rendered {
  const projected = projectBranch(branch).map((i) => i.message);
  const index = indexer ?? ToolCallIndexer.fromBranch(branch);
  const { messages, phases, diagnostics } = pruneMessages(projected, { indexer: index, config, isProtected: protectionTest(config) });
  return {
    before: convertToLlm(projected),
    after: convertToLlm(messages),
    afterAgent: messages,
    phases: phases.map((p) => ({ phase: p.phase, messages: convertToLlm(p.messages) })),
    diagnostics,
  };
}
