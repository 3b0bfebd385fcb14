/**
 * One session as every command reads it, built once: the branch, the configuration and its
 * protection test, the pruner index rebuilt from the branch, Pi's projection, the capture and the
 * render. Each part is computed on first use and then shared, so one `run` projects, indexes and
 * renders the branch as read exactly once (the after-run render is of another branch).
 */
import type { PruneConfig } from "../config/config.js";
import { branchMessages } from "../context/branch-messages.js";
import { compactedMessageTimestamps, projectContext, type BranchContext, type ContextItem } from "../context/projection.js";
import { ownContextEditIds, withoutOwnContextEdits } from "../entries/read.js";
import { captureBatches, type CaptureResult } from "../prune/capture.js";
import { ToolCallIndexer } from "../prune/indexer.js";
import { protectionTest, type ProtectionTest } from "../prune/protect.js";
import { renderItems, type Rendered } from "../render/render.js";
import type { Session } from "../session/session.js";
import type { AgentMessage, SessionEntry } from "../session/types.js";

/** The parts of a session the planner, the quick check, the render and the metrics read. */
export class SessionView {
  readonly branch: SessionEntry[];
  readonly isProtected: ProtectionTest;
  private index?: ToolCallIndexer;
  private projected?: BranchContext;
  private source?: BranchContext;
  private ownMessages?: AgentMessage[];
  private captured?: CaptureResult;
  private renderedAsRead?: Rendered;
  private compacted?: ReadonlySet<number>;

  constructor(
    readonly session: Session,
    readonly config: PruneConfig,
  ) {
    this.branch = session.branch;
    this.isProtected = protectionTest(config);
  }

  /**
   * The pruner index rebuilt from the branch's `context-prune-*` entries. `planRun` advances it to
   * the state after the entries it plans; read the capture and the render before that (it does).
   */
  get indexer(): ToolCallIndexer {
    this.index ??= ToolCallIndexer.fromBranch(this.branch);
    return this.index;
  }

  /** Pi's projection of the branch (compaction-aware, context edits applied). */
  get context(): BranchContext {
    this.projected ??= projectContext(this.branch);
    return this.projected;
  }

  /** Timestamps of the user and assistant messages Pi's latest compaction left out (the render reports no fault for chains there). */
  get behindCompaction(): ReadonlySet<number> {
    this.compacted ??= compactedMessageTimestamps(this.branch);
    return this.compacted;
  }

  /** The projected context items. */
  get items(): ContextItem[] {
    return this.context.items;
  }

  /**
   * Pi's projection without the context edits condense wrote for stock Pi (docs/design.md "Native
   * mode"), other edits applied: what capture and chain compression replay the extension on. Those
   * edits are the render's output, not the user's: left in, a result they omit would look
   * unanswered, a chain start carrying its block would look like a block, and a second run would
   * see another session than the first. The same object as `context` when there are none.
   */
  get sourceContext(): BranchContext {
    if (!this.source) this.source = ownContextEditIds(this.branch).size === 0 ? this.context : projectContext(withoutOwnContextEdits(this.branch));
    return this.source;
  }

  /** Message and custom-message entries of the branch as messages, not compaction-aware (chains, metrics). */
  get branchMessages(): AgentMessage[] {
    this.ownMessages ??= branchMessages(this.branch).map((m) => m.message);
    return this.ownMessages;
  }

  /** Batches the flush would take, against the index as read. */
  get capture(): CaptureResult {
    this.captured ??= captureBatches(this.branch, this.indexer, this.isProtected, this.config.batchingMode, this.sourceContext, this.config.purgeErrors);
    return this.captured;
  }

  /**
   * A view of the same session that shares what this one has computed (projection, messages,
   * capture, render as read — computed now if not yet) and has an index of its own, so that
   * planning on it leaves this view's index as read. Fork before planning on this view.
   */
  fork(): SessionView {
    const other = new SessionView(this.session, this.config);
    other.projected = this.context;
    other.ownMessages = this.branchMessages;
    other.captured = this.capture;
    other.renderedAsRead = this.rendered;
    return other;
  }

  /** The context as read, before and after pruning. */
  get rendered(): Rendered {
    this.renderedAsRead ??= renderItems(this.items, this);
    return this.renderedAsRead;
  }
}

/** The view of a loaded session under a configuration. */
export function sessionView(session: Session, config: PruneConfig): SessionView {
  return new SessionView(session, config);
}
