/**
 * The progress line of a command over several sessions (`forEachSession`, ora behind `Spinner`)
 * while the work keeps the event loop busy: CI once saw `compact DIR --jobs 1` finish 24 sessions
 * without the line ever counting one done, because ora was still loading (its modules wait for turns
 * of the event loop that the work did not give) and frames are drawn on a timer.
 */
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { forEachSession } from "../src/cli/batch.js";
import { Output, Spinner } from "../src/cli/output.js";

/** A terminal on stderr: 80 columns; what was written, as text. */
function fakeTerminal(): Writable & { isTTY: true; columns: number; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { isTTY: true; columns: number; text: () => string };
  stream.isTTY = true;
  stream.columns = 80;
  // What ora moves the cursor with (tty.WriteStream's; no bytes needed here).
  Object.assign(stream, { cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
  stream.text = () => chunks.join("");
  return stream;
}

/** Keep this thread busy for `ms` without letting the event loop turn. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* spin */
  }
}

describe("the progress line while the work does not let the event loop turn", () => {
  // ora draws only on an interactive terminal: not with CI set or TERM=dumb.
  const saved = { CI: process.env.CI, TERM: process.env.TERM };
  beforeEach(() => {
    delete process.env.CI;
    process.env.TERM = "xterm-256color";
  });
  afterEach(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it("each file done is on screen before the next one starts", async () => {
    const stderr = fakeTerminal();
    const out = new Output({}, fakeTerminal(), stderr);
    const seenAtStart: string[] = [];
    const files = ["/s/a.jsonl", "/s/b.jsonl", "/s/c.jsonl"];
    const outcomes = await forEachSession(files, out, {
      jobs: 1,
      label: "counting",
      work: async (file) => {
        seenAtStart.push(stderr.text());
        busy(120);
        return file.length;
      },
    });
    expect(outcomes.map((o) => o.result)).toEqual([10, 10, 10]);
    expect(seenAtStart[0]).toContain("counting 0/3");
    expect(seenAtStart[1]).toContain("counting 1/3");
    expect(seenAtStart[2]).toContain("counting 2/3");
  });

  it("Spinner: ready once the line is drawn; a new text is drawn at once, not on the next tick", async () => {
    const stderr = fakeTerminal();
    const spinner = new Spinner("first", stderr);
    await spinner.ready;
    expect(stderr.text()).toContain("first");
    busy(60);
    spinner.text = "second";
    expect(stderr.text()).toContain("second");
    spinner.stop();
    // A late update (a model call's progress after the command stopped its spinner) draws nothing.
    const stopped = stderr.text();
    busy(60);
    spinner.text = "third";
    spinner.render();
    expect(stderr.text()).toBe(stopped);
  });
});
