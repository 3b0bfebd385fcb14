/**
 * One definition of "before" and "after" (docs/design.md "Context size"): `run`, `render --stats`,
 * `metrics`, `budget`, `compact` and `report` print the same numbers for the same session — the
 * context the user's Pi sends now, and after `run`: stock Pi's own projection while Pi's settings
 * leave the pi-condense extension off (or uninstalled), the extension's render once they install
 * it and switch it on — on every shared session with the extension off, and on a few with it on;
 * once `run` has written, the context Pi sends is what it said "after" would be.
 */
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyInto, runCliWith, SHARED_SESSIONS, tempDir as makeTempDir } from "./cli-capture.js";
import { HEADERLESS_SHARED, sharedSessionFiles } from "./helpers.js";

const present = existsSync(SHARED_SESSIONS);
const files = sharedSessionFiles();
const HEADERLESS = HEADERLESS_SHARED;
/** The sessions also checked with the extension switched on, and in the human output. */
const SAMPLE = ["kimchi-session.v3.jsonl", "pimono-large-session.migrated-v3.jsonl", "pi-generated-compacted.v3.jsonl", "trl-session.v3.jsonl"];

type Size = { messages: number; chars: number; tokens: number };
type Views = { before: Size; after: Size; piOnly: { before: Size; after: Size } };
type Target = { used: "pi" | "extension"; reason: string };
/** What the user's Pi sends, by the documented rule: stock Pi's (`piOnly`) for the `pi` target. */
const sent = (context: Views, target: Target) => {
  const { before, after } = target.used === "pi" ? context.piOnly : context;
  return { before, after };
};

const n = (x: number) => x.toLocaleString("en-US");

for (const extension of ["off", "on"] as const) {
  describe.skipIf(!present)(`with the extension ${extension}, every command prints what the user's Pi sends`, () => {
    let tmp: ReturnType<typeof makeTempDir>;
    let env: Record<string, string>;
    beforeAll(() => {
      tmp = makeTempDir(`agreement-${extension}`);
      const agent = path.join(tmp.dir, "agent");
      mkdirSync(agent);
      if (extension === "on") {
        writeFileSync(path.join(agent, "settings.json"), JSON.stringify({ packages: ["npm:pi-condense"], contextPrune: { enabled: true } }));
      }
      env = { PI_CODING_AGENT_DIR: agent, CONDENSE_NOW: "2026-01-01T00:00:00.000Z", COLUMNS: "200" };
    });
    afterAll(() => tmp?.cleanup());

    const cli = (...args: string[]) => runCliWith(env, ...args, "--quiet");
    const json = async (...args: string[]) => {
      const r = await cli(...args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return JSON.parse(r.stdout);
    };
    const text = async (...args: string[]) => {
      const r = await cli(...args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };

    it.each(extension === "on" ? SAMPLE : files)("%s", async (name) => {
      const copy = copyInto(tmp.dir, path.join(SHARED_SESSIONS, name));
      // An old mtime: `run` must not take the copy for a session Pi is writing.
      utimesSync(copy, new Date("2025-01-01"), new Date("2025-01-01"));
      const migrate = /\.v1\.|hookmessage/.test(name) ? ["--migrate"] : [];
      if (name === HEADERLESS) {
        // Pi cannot open it: every read-only command fails on it (unusable input, exit 2), with the same reason.
        for (const args of [
          ["render", copy, "--stats"],
          ["metrics", copy],
          ["budget", copy],
        ]) {
          const r = await cli(...args);
          expect(r.code, args[0]).toBe(2);
          expect(r.stderr, args[0]).toContain(`${copy}: no session header`);
        }
        return;
      }
      const as = extension === "on" ? "extension" : "pi-only";
      const used = extension === "on" ? "extension" : "pi";
      const render: { as: string; context: { before: Size; after: Size } } = await json("render", copy, "--stats", "--format", "json");
      expect(render.as).toBe(as);
      const expected = render.context;
      expect(expected.after.tokens).toBeLessThanOrEqual(expected.before.tokens);
      const metrics: { sessions: { context: Views; target: Target }[] } = await json("metrics", copy, "--json", "--jobs", "1");
      expect(metrics.sessions[0].target.used).toBe(used);
      expect(sent(metrics.sessions[0].context, metrics.sessions[0].target)).toEqual({ before: expected.before, after: expected.after });
      const budget: { target: Target; context: Views } = await json("budget", copy, "--json");
      expect(budget.target.used).toBe(used);
      expect(sent(budget.context, budget.target)).toEqual(expected);
      // compact measures the context it starts from the same way.
      const compact: { sessions: { context: Views; target: Target }[] } = await json("compact", copy, "--dry-run", "--json", ...migrate);
      expect(compact.sessions[0].target.used).toBe(used);
      expect(sent(compact.sessions[0].context, compact.sessions[0].target).before).toEqual(expected.before);
      const dry: { sessions: { context: Views; target: Target }[] } = await json("run", copy, "--dry-run", "--json", ...migrate);
      expect(dry.sessions[0].target.used).toBe(used);
      expect(sent(dry.sessions[0].context, dry.sessions[0].target)).toEqual(expected);
      if (SAMPLE.includes(name)) {
        // report takes every figure from the same functions.
        const report: {
          sessions: { run: { context: Views; target: Target }; budget: { context: Views; target: Target }; compact: { context: Views; target: Target } }[];
        } = await json("report", copy, "--json");
        const s = report.sessions[0];
        expect(sent(s.run.context, s.run.target)).toEqual(expected);
        expect(sent(s.budget.context, s.budget.target)).toEqual(expected);
        expect(sent(s.compact.context, s.compact.target)).toEqual(sent(compact.sessions[0].context, compact.sessions[0].target));
        // And the human output prints those numbers, naming whose context they are.
        const who = extension === "on" ? "with pi-condense" : "stock Pi";
        const line = `context Pi sends (${who}): ${n(expected.before.tokens)} ~tokens now → ${n(expected.after.tokens)} after \`condense run\``;
        expect(await text("render", copy, "--stats")).toContain(line);
        expect(await text("budget", copy, "--no-chart")).toContain(line);
        expect(await text("run", copy, "--dry-run")).toContain(`${n(expected.before.tokens)} → ${n(expected.after.tokens)} (`);
        expect(await text("metrics", copy)).toContain(`${n(expected.before.tokens)} → ${n(expected.after.tokens)} (`);
        const compacted = await text("compact", copy, "--dry-run");
        expect(compacted).toMatch(new RegExp(`│ +${n(expected.before.tokens)}( → | │)`));
        expect(compacted).toContain(`context = what Pi sends (${who})`);
        expect(await text("report", copy, "--json")).toContain(`"used": "${used}"`);
      }
      // Written for real: what Pi sends now is what "after" promised, and nothing is left to do.
      const written: { sessions: { context: Views; target: Target }[] } = await json("run", copy, "--json", ...migrate);
      expect(sent(written.sessions[0].context, written.sessions[0].target)).toEqual(expected);
      const later: { context: { before: Size; after: Size } } = await json("render", copy, "--stats", "--format", "json");
      expect(later.context.before).toEqual(expected.after);
      expect(later.context.after).toEqual(expected.after);
    });
  });
}
