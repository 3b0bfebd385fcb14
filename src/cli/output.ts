/**
 * Where output goes (docs/design.md §2): data to stdout, progress and warnings to stderr; colors
 * only on a TTY (chalk honors NO_COLOR / FORCE_COLOR); spinners only on a TTY stderr and never
 * with --json; tables with cli-table3.
 */
import { Chalk, type ChalkInstance } from "chalk";
import Table from "cli-table3";

export interface OutputOptions {
  json?: boolean;
  quiet?: boolean;
}

/** Streams and switches shared by every command. */
export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  /** Colors for stdout. */
  readonly c: ChalkInstance;
  /** Colors for stderr. */
  readonly ce: ChalkInstance;

  constructor(
    options: OutputOptions,
    readonly stdout: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
    readonly stderr: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  ) {
    this.json = !!options.json;
    this.quiet = !!options.quiet;
    this.c = new Chalk({ level: colorLevel(stdout) });
    this.ce = new Chalk({ level: colorLevel(stderr) });
  }

  /** Write data to stdout (a newline is added). */
  print(text: string): void {
    this.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  }

  /** One JSON document on stdout. */
  printJson(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A warning on stderr, unless --quiet. */
  warn(text: string): void {
    if (!this.quiet) this.stderr.write(`${this.ce.yellow("warning:")} ${text}\n`);
  }

  /** An informational line on stderr, unless --quiet or --json. */
  info(text: string): void {
    if (!this.quiet && !this.json) this.stderr.write(`${text}\n`);
  }

  /** An error on stderr (always shown). */
  error(text: string): void {
    this.stderr.write(`${this.ce.red("error:")} ${text}\n`);
  }

  /**
   * A spinner on a TTY stderr (not with --json or --quiet); otherwise null. `ora` is loaded on
   * first use, so commands that never show one do not pay for it at start-up. A terminal that
   * reports 0 columns (e.g. a pty without a size) gets none: ora would count its lines as infinite.
   */
  spinner(text: string): Spinner | null {
    if (this.json || this.quiet || !this.stderr.isTTY || (this.stderr as { columns?: number }).columns === 0) return null;
    return new Spinner(text, this.stderr);
  }

  /** A table rendered to a string; header cells are bold on a TTY. */
  table(head: string[], rows: (string | number)[][], align?: ("left" | "right")[]): string {
    const table = new Table({
      head: head.map((h) => this.c.bold(h)),
      style: { head: [], border: [], compact: true },
      ...(align ? { colAligns: align } : {}),
    });
    for (const row of rows) table.push(row.map((cell) => (typeof cell === "number" ? cell.toLocaleString("en-US") : cell)));
    return table.toString();
  }
}

function colorLevel(stream: { isTTY?: boolean }): 0 | 1 | 2 | 3 {
  const force = process.env.FORCE_COLOR;
  if (force !== undefined && force !== "0" && force !== "false") return force === "2" ? 2 : force === "3" ? 3 : 1;
  if ("NO_COLOR" in process.env && process.env.NO_COLOR !== "") return 0;
  if (force === "0" || force === "false") return 0;
  return stream.isTTY ? 1 : 0;
}

/** A progress line backed by `ora`, loaded lazily; `text` may be set before it has loaded. */
export class Spinner {
  private ora: { text: string; stop(): unknown; start(): unknown; clear(): unknown; render(): unknown } | null = null;
  private stopped = false;
  private current: string;

  constructor(text: string, stream: NodeJS.WritableStream) {
    this.current = text;
    void import("ora").then(({ default: ora }) => {
      if (this.stopped) return;
      // discardStdin off: ora's raw-mode stdin only turns Ctrl-C back into SIGINT while something reads
      // stdin, and nothing does here — with it on, Ctrl-C would be swallowed.
      this.ora = ora({ text: this.current, stream: stream as NodeJS.WritableStream & { isTTY: boolean }, discardStdin: false });
      this.ora.start();
    });
  }

  get text(): string {
    return this.current;
  }

  set text(value: string) {
    this.current = value;
    if (this.ora) this.ora.text = value;
  }

  stop(): void {
    this.stopped = true;
    this.ora?.stop();
  }

  /** Erase the line (before printing something else on stderr). */
  clear(): void {
    this.ora?.clear();
  }

  /** Draw the line again after {@link clear}. */
  render(): void {
    this.ora?.render();
  }
}

/**
 * Short, unique labels for session paths: the file name, with as many parent folders as it takes
 * to tell two sessions apart (`a/s.jsonl` and `b/s.jsonl`).
 */
export function displayNames(paths: string[]): string[] {
  const parts = paths.map((p) => p.split(/[\\/]/).filter((x) => x !== ""));
  const depth = paths.map(() => 1);
  const label = (i: number) => parts[i].slice(-depth[i]).join("/");
  for (let round = 0; round < 64; round++) {
    const seen = new Map<string, number[]>();
    paths.forEach((_, i) => {
      const l = label(i);
      seen.set(l, [...(seen.get(l) ?? []), i]);
    });
    let changed = false;
    for (const group of seen.values()) {
      if (group.length < 2) continue;
      for (const i of group) {
        if (depth[i] < parts[i].length) {
          depth[i]++;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return paths.map((_, i) => label(i));
}
