/**
 * The README's native-mode figures are what `npm run bench` prints (bench/native.js, section
 * "native mode"): the same rows, computed here from the sources, give the range of stock Pi's
 * reduction and the gap to the extension that the README states.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { benchNative, MANY_CALLS, nativeSummary } from "../bench/native.js";
import { REPO_ROOT, SHARED_SESSIONS } from "./helpers.js";

/** condense's module at `p` (a path under dist/), from the sources. */
const fromSources = (p: string) => import(/* @vite-ignore */ pathToFileURL(path.join(REPO_ROOT, "src", p.replace(/\.js$/, ".ts"))).href);
const change = (before: number, after: number) => (100 * (before - after)) / before;

describe.skipIf(!existsSync(SHARED_SESSIONS))("README figures", () => {
  it("native mode: stock Pi's reduction and the gap to the extension, as the bench prints them", async () => {
    const rows = await benchNative(fromSources);
    const summary = nativeSummary(rows);
    const m =
      /(\d+) shared sessions with 150\+ tool calls in the context: stock Pi's context shrinks by ([\d.]+)–([\d.]+)%, ([\d.]+)–([\d.]+) points less/.exec(
        summary,
      );
    expect(m, summary).not.toBeNull();
    const [, count, low, high, gapLow, gapHigh] = m ?? [];
    const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
    const smaller = rows.filter((r) => !r.error && r.calls > 0 && r.calls < MANY_CALLS && r.piAlone < r.before).map((r) => change(r.before, r.piAlone));
    const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain(
      `On the ${words[Number(count)]} shared sessions with ${MANY_CALLS} or more tool calls in the context, stock Pi's context shrinks by ${low}–${high}% ` +
        `(Pi's own estimate), ${gapLow}–${gapHigh} points less than the extension's; on the smaller ones by ` +
        `${Math.min(...smaller).toFixed(1)}–${Math.max(...smaller).toFixed(1)}% (\`npm run bench\`, section "native mode"`,
    );
  }, 120_000);
});
