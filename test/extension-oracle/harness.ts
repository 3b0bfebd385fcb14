/**
 * The pi-condense extension as an oracle, run the way Pi 1.6 runs it. This file runs in a child
 * process under Node 22 with tsx (Pi's extension loader needs Node 22); `client.ts` starts it.
 *
 * Input (JSON on stdin): { extension: folder of the unmodified extension, sessions: Job[] }.
 * Per session, with a fresh extension instance each time:
 *   1. Pi's extension loader (`loadExtensionsCached`, which Pi itself uses) loads the extension's
 *      entry (its package.json `pi.extensions`) and runs its factory: a fresh instance;
 *   2. an `ExtensionRunner` over `SessionManager.open(file)`, bound to recording actions (nothing
 *      the extension appends is written to the file);
 *   3. `session_start` (the extension rebuilds its index from the branch);
 *   4. the runner's `context` event on `buildSessionContext().messages`, then Pi's `convertToLlm`:
 *      the message array Pi hands the provider;
 *   5. `context_tree_query` of the live extension for each requested ref, and the refs t1…tN it knows;
 *   6. the extension's own `ToolCallIndexer`, rebuilt from the same branch, for the full ref map
 *      and the next ref number it would hand out.
 * Output (JSON on stdout): { results: HarnessResult[] }. `PI_CODING_AGENT_DIR` (set by the caller)
 * names the agent folder whose settings.json switches the extension on.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { readInput, runChild, type HarnessJob, type HarnessResult } from "./protocol.js";

const REPO = path.resolve(import.meta.dirname, "../..");
const PI = path.join(REPO, "node_modules/@earendil-works/pi-coding-agent/dist");

const importPi = async (rel: string): Promise<any> => import(pathToFileURL(path.join(PI, rel)).href);

function occKey(toolCallId: string, resultTimestamp: unknown): string {
  return typeof resultTimestamp === "number" ? `${toolCallId}@${resultTimestamp}` : toolCallId;
}

async function main(): Promise<{ results: HarnessResult[] }> {
  const input = await readInput<{ extension: string; sessions: HarnessJob[] }>();
  const { loadExtensionsCached } = await importPi("core/extensions/loader.js");
  const { ExtensionRunner } = await importPi("core/extensions/runner.js");
  const { SessionManager } = await importPi("core/session-manager.js");
  const { convertToLlm } = await importPi("core/messages.js");
  // The extension's own indexer class, loaded from its unmodified source (tsx compiles it).
  const { ToolCallIndexer } = await import(pathToFileURL(path.join(input.extension, "src/indexer.ts")).href);
  const manifest = JSON.parse(readFileSync(path.join(input.extension, "package.json"), "utf8"));
  const entries: string[] = manifest.pi.extensions.map((e: string) => path.resolve(input.extension, e));

  const results: HarnessResult[] = [];
  for (const job of input.sessions) {
    let sm: any;
    try {
      sm = SessionManager.open(job.file);
    } catch (error) {
      results.push({ file: job.file, openError: (error as Error).message } as HarnessResult);
      continue;
    }
    const cwd = sm.getCwd();
    // A fresh extension instance per session. The loader's cache (keyed by the loading folder, so
    // one fixed folder here) keeps jiti from compiling the same source again for every session.
    const loaded = await loadExtensionsCached(entries, REPO);
    if (loaded.errors.length > 0) throw new Error(`loading the extension: ${JSON.stringify(loaded.errors)}`);
    const runner = new ExtensionRunner(loaded.extensions, loaded.runtime, cwd, sm, undefined);
    const appended: HarnessResult["appended"] = [];
    const extensionErrors: HarnessResult["extensionErrors"] = [];
    runner.onError((e: { event: string; error: string }) => extensionErrors.push({ event: e.event, error: e.error }));
    const none = () => undefined;
    runner.bindCore(
      {
        sendMessage: (message: unknown) => appended.push({ customType: "<sendMessage>", data: message }),
        sendUserMessage: none,
        appendEntry: (customType: string, data: unknown) => appended.push({ customType, data }),
        setSessionName: none,
        getSessionName: () => sm.getSessionName(),
        setLabel: none,
        getActiveTools: () => [],
        getAllTools: () => [],
        getSettings: () => ({}),
        setActiveTools: none,
        refreshTools: none,
        getCommands: () => [],
        setModel: async () => false,
        getThinkingLevel: () => "off",
        setThinkingLevel: none,
      },
      {
        getModel: none,
        getScopedModels: () => [],
        isIdle: () => true,
        isProjectTrusted: () => true,
        getSignal: none,
        abort: none,
        hasPendingMessages: () => false,
        shutdown: none,
        getContextUsage: none,
        compact: none,
        getSystemPrompt: () => "",
      },
    );
    await runner.emit({ type: "session_start", reason: "startup" });

    let projected: unknown[];
    try {
      projected = sm.buildSessionContext().messages;
    } catch (error) {
      results.push({ file: job.file, openError: `buildSessionContext: ${(error as Error).message}` } as HarnessResult);
      continue;
    }
    const piOnly = convertToLlm(projected);
    const sent = await runner.emitContext(projected);
    const messages = convertToLlm(sent);
    const changed = !(sent.length === projected.length && JSON.stringify(sent) === JSON.stringify(projected));

    const tool = runner.getToolDefinition("context_tree_query");
    const ctx = runner.createContext();
    const ask = async (ids: string[]) => tool.execute("oracle-query", { toolCallIds: ids }, undefined, undefined, ctx);
    const queries: string[] = [];
    for (const ids of job.queries) queries.push((await ask(ids)).content.map((c: { text: string }) => c.text).join(""));
    const liveRefs: Record<string, string> = {};
    for (let n = 1; n <= job.probeRefs; n++) {
      const ref = `t${n}`;
      const record = (await ask([ref])).details?.results?.[ref];
      if (record) liveRefs[ref] = occKey(record.toolCallId, record.resultTimestamp);
    }

    const indexer = new ToolCallIndexer();
    indexer.reconstructFromSession({ sessionManager: sm });
    const refs = Object.fromEntries(indexer.aliasToToolCallId as Map<string, string>);
    const aliases = Object.fromEntries(indexer.dedupAliasToOriginal as Map<string, string>);

    results.push({
      file: job.file,
      extensionErrors,
      changed,
      messages,
      piOnly,
      refs,
      aliases,
      nextShortRef: indexer.nextShortAliasNumber,
      liveRefs,
      queries,
      appended,
    });
  }
  return { results };
}

runChild(main);
