// Child process of the kill suite: commit a planned write to a session with the real commit code
// (a private build), so that CONDENSE_TEST_FAULT can kill it at a byte or step of the protocol.
// argv: <dist folder> <plan.json> <session>. The plan holds the entries and sidecars of one run.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dist, planFile, session] = process.argv.slice(2);
process.on("SIGXFSZ", () => {});
const { commitRun } = await import(pathToFileURL(path.join(dist, "session/commit.js")).href);
const plan = JSON.parse(readFileSync(planFile, "utf8"));
const st = statSync(session);
const result = await commitRun(
  { path: session, size: st.size, mtimeMs: st.mtimeMs, endsWithNewline: plan.endsWithNewline },
  { entries: plan.entries, sidecars: plan.sidecars },
  {},
);
process.stdout.write(`${JSON.stringify(result)}\n`);
