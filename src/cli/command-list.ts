/**
 * The commands as the top-level help lists them: name, one-line description, arguments. Each
 * command's file takes its description from here, and `main.ts` registers a command that is not the
 * one run from this alone — so `condense --help` and every command start without loading the
 * modules of the others (start-up against `node -e 0`, issue 18).
 */
import { SKILL_NAME } from "../query/skill.js";

/** What the top-level help shows of a command. */
export interface CommandSummary {
  description: string;
  /** The arguments as commander writes them (`[sessions...]`, `<refs...>`). */
  args: string;
  /** The command run when the first argument names no command. */
  isDefault?: boolean;
  /** The command takes no option (its help line shows no `[options]`). */
  noOptions?: boolean;
}

const SESSIONS = "[sessions...]";

/** Every command, in the order the help lists them. */
export const COMMAND_SUMMARIES = {
  run: { description: "prune sessions: summarize unpruned tool batches and append the pruning entries", args: SESSIONS, isDefault: true },
  render: { description: "print the model-visible context of a session after pruning", args: "[session]" },
  query: { description: "print the stored original output behind short refs (t3), occurrence keys or raw tool-call ids", args: "<refs...>" },
  metrics: { description: "context metrics and structural diagnostics of sessions; limits turn it into a CI gate (exit 3)", args: SESSIONS },
  budget: { description: "dry-run of the budget triggers (autoBudgetThreshold, budgetTurnDelta) over the session's recorded usage", args: "[session]" },
  compact: {
    description: "Pi's own compaction, offline: append a Pi-native compaction entry (summary + kept recent messages) to each session",
    args: SESSIONS,
  },
  undo: { description: "remove the entries of the last condense run or compact on a session, when nothing was appended after them", args: "[session]" },
  report: {
    description: "a picture of sessions: context per turn, where pruning and compaction fire, what run and compact would save (HTML, JSON or a table)",
    args: SESSIONS,
  },
  "install-skill": { description: `install the ${SKILL_NAME} Pi skill: tells the agent how to get pruned outputs back with condense query`, args: "" },
  completion: { description: "print the shell completion script for bash, zsh or fish", args: "<shell>", noOptions: true },
} satisfies Record<string, CommandSummary>;

export type CommandName = keyof typeof COMMAND_SUMMARIES;
