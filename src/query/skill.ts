/**
 * The Pi skill condense installs (`condense install-skill`): a `SKILL.md` telling the agent inside a
 * pruned session when and how to get a pruned tool output back with `condense query`. Its front
 * matter follows what Pi 1.6 reads (pi-coding-agent `dist/core/skills.js`): a folder
 * `<skills dir>/<name>/SKILL.md`; `name` of lowercase a-z, 0-9 and single inner hyphens, at most 64
 * characters; a non-empty `description` of at most 1024 characters, which is all the model sees until
 * it loads the file. Pi 1.6 loads skills from `<agent dir>/skills/` (every project) and
 * `<cwd>/.pi/skills/` (one project); `skillPath` names the file in either.
 */
import { join, resolve } from "node:path";
import { recoveryCommand } from "../context/vocabulary.js";
import { agentDir } from "../session/locate.js";

/** The skill's name, also its folder name. */
export const SKILL_NAME = "condense-recover";

/** When to load the skill: the only text Pi puts in the system prompt. */
export const SKILL_DESCRIPTION =
  "Get back the exact original output of a tool call that was pruned from this conversation. Use when a " +
  'tool result was replaced by a stub naming a ref ("[Summarized in pruner summary, ref `t3`...]", ' +
  '"[Oversized output spilled to file — ...]") or a pruner summary or compressed sub-task lists refs ' +
  "like t3, and the summary is not enough: exact lines, numbers, error messages, or file contents you " +
  "are about to edit.";

/**
 * Where the skill goes: `<agent dir>/skills/condense-recover/SKILL.md` (agent dir:
 * `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`), or with `project`
 * `<cwd>/.pi/skills/condense-recover/SKILL.md`. Absolute.
 */
export function skillPath(project: boolean, cwd: string = process.cwd(), env: NodeJS.ProcessEnv = process.env): string {
  const skillsDir = project ? join(resolve(cwd), ".pi", "skills") : join(agentDir(env), "skills");
  return join(skillsDir, SKILL_NAME, "SKILL.md");
}

/** The whole `SKILL.md` (front matter and body), ending with a newline. */
export function skillMarkdown(): string {
  return `---
name: ${SKILL_NAME}
description: ${JSON.stringify(SKILL_DESCRIPTION)}
---

# Recover a pruned tool output

Old tool outputs in this session were pruned by condense (or the pi-condense extension): each one was
replaced by a short stub naming a ref such as \`t3\`, and a summary of its batch. The original output is
still stored in the session file, byte for byte. Print it with bash:

\`\`\`sh
${recoveryCommand("t3")}              # one ref
${recoveryCommand(["t3", "t7"])}           # several refs
${recoveryCommand("t3")} --full       # the whole output (by default at most 2000 lines / 50 KB, from the head)
${recoveryCommand("t3")} --json       # a JSON document: the stored record, output, where it came from
\`\`\`

- The session is found by itself: Pi's bash tool sets \`$PI_SESSION_FILE\` to the current session;
  without it condense takes the newest session of the current directory, the one \`pi --continue\`
  opens. If condense reports no session, or prints outputs that do not belong to this conversation,
  name the session: \`condense query t3 --session <session file or session id>\`.
- A raw tool-call id or an occurrence key (\`bash_23@1745251200000\`) works as a ref too; an unknown
  ref is reported on stderr (exit code 1) and the other refs are still printed.
- The stored output is what the tool returned at the time. When the thing itself may have changed
  since (a file edited later), run the tool again instead.
- If \`condense\` is not installed, tell the user; do not guess the output from the summary.
`;
}
