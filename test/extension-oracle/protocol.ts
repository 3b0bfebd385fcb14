/**
 * What the test process and the Node 22 children (harness.ts, settings-harness.ts) exchange: one
 * JSON document on the child's stdin, one on its stdout.
 */

/** One session for the extension harness. */
export interface HarnessJob {
  file: string;
  /** context_tree_query calls to make, each with the listed refs (or ids). */
  queries: string[][];
  /** Probe t1 … t<probeRefs> through context_tree_query to list the refs the live extension knows. */
  probeRefs: number;
}

/** What the extension harness reports for one session. */
export interface HarnessResult {
  file: string;
  /** Set when Pi could not open the file or build its context; nothing else is then set. */
  openError?: string;
  extensionErrors: { event: string; error: string }[];
  /** Whether what Pi sends differs from its own projection (the extension changed something). */
  changed: boolean;
  /** What Pi sends: the runner's context event on buildSessionContext().messages, then convertToLlm. */
  messages: unknown[];
  /** The context without the extension: Pi's own projection, converted. */
  piOnly: unknown[];
  /** ref → occurrence key, from the extension's ToolCallIndexer rebuilt from the branch. */
  refs: Record<string, string>;
  /** dedup alias occurrence key → original occurrence key (same source). */
  aliases: Record<string, string>;
  /** The extension's next ref number. */
  nextShortRef: number;
  /** ref → occurrence key of the record the live extension's context_tree_query returns for it. */
  liveRefs: Record<string, string>;
  /** The text context_tree_query returned for each call in the job's `queries`, in order. */
  queries: string[];
  /** Entries the extension asked Pi to append while starting and building the context. */
  appended: { customType: string; data: unknown }[];
}

/** What Pi 1.6 itself makes of its settings for one project folder (settings-harness.ts). */
export interface PiSettingsResult {
  trusted: boolean;
  merged: Record<string, unknown>;
  errorPaths: string[];
}

/** In a child: read the JSON document on stdin. */
export async function readInput<T>(): Promise<T> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as T;
}

/**
 * In a child: run `main`, print its document once it is flushed to the pipe, and exit (Pi and
 * the extension leave timers behind); on failure print the stack on stderr and exit 1.
 */
export function runChild(main: () => Promise<unknown>): void {
  main().then(
    (doc) => process.stdout.write(JSON.stringify(doc), () => process.exit(0)),
    (error) => {
      process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
