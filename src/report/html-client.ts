/// <reference lib="dom" />
/**
 * The script of the `condense report` page: it reads the embedded `condense.report/1` document and
 * draws it — the table of sessions (sortable), then per session its figures, the chart of context
 * per turn (uPlot, bundled into the page), the context before → after `run` and `compact`, the
 * events by turn and the largest tool outputs. It runs in the browser, not in Node: each function
 * here is put into the page as its source text (html-page.ts), so they use only the DOM, the
 * `window.uPlot` global and each other — no imports, nothing from this module's scope.
 *
 * Every number it shows sits in an element with `data-field` (a path into the session's JSON) and
 * `data-value` (the raw value), inside an element with `data-session` (the session's anchor), and
 * every chart's data is listed in `window.condenseCharts`: the browser test compares both with the
 * document. Text from the session is set with `textContent` only.
 */
import type uPlotType from "uplot";
import type { ReportDocument, SessionReport } from "./session-report.js";

declare global {
  // The uPlot bundle's global, and what the page exposes for the browser test.
  interface Window {
    uPlot: typeof uPlotType;
    condenseCharts?: { session: string; chart: string; series: string[]; data: (number | null)[][] }[];
  }
}

type Child = Node | string | null | undefined;

/** An element with attributes and children (strings become text nodes). */
export function h(tag: string, attrs: Record<string, string | number | null | undefined>, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

/** Numbers as the page writes them: `12,345`, `$1.23`, `45%`, `1.2 MB`; null as `—`. */
export function fmt(value: number | null | undefined, unit: "int" | "usd" | "pct" | "bytes"): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  if (unit === "usd") return `$${value.toFixed(value >= 100 ? 0 : 2)}`;
  if (unit === "pct") return `${Math.round(value)}%`;
  if (unit === "bytes") return value >= 1_048_576 ? `${(value / 1_048_576).toFixed(1)} MB` : `${Math.round(value / 1024)} KB`;
  return Math.round(value).toLocaleString("en-US");
}

/** The value at a dotted path of an object (`run.context.after.tokens`). */
export function pick(value: unknown, path: string): unknown {
  let v: unknown = value;
  for (const part of path.split(".")) v = v !== null && typeof v === "object" ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

/** A number from the session's JSON in a span that names its path and value. */
export function figure(s: SessionReport, path: string, unit: "int" | "usd" | "pct" | "bytes" = "int"): HTMLElement {
  const v = pick(s, path);
  const n = typeof v === "number" ? v : null;
  return h("span", { class: "num", "data-field": path, "data-value": n === null ? "null" : String(n) }, fmt(n, unit));
}

/** How a session is named: short id (the file name without one, or with `byFile` where ids are shared), date, then its name or first prompt cut to `max` characters. */
export function sessionTitle(s: SessionReport, max: number, byFile = false): string {
  const title = s.label.title.length > max ? `${s.label.title.slice(0, max - 1).trimEnd()}…` : s.label.title;
  return [(!byFile && s.label.shortId) || s.session.split(/[\\/]/).pop(), s.label.date, title].filter(Boolean).join(" ");
}

/** The share saved going from `before` to `after`, as `−45%` (a growth as `+12%`). */
export function change(before: number, after: number): string {
  if (before <= 0) return "";
  const pct = Math.round((100 * (after - before)) / before);
  return pct === 0 ? "±0%" : pct < 0 ? `−${-pct}%` : `+${pct}%`;
}

/** Draw the whole page from the embedded document. */
export function reportMain(): void {
  const doc = JSON.parse(document.getElementById("condense-report")?.textContent ?? "{}") as ReportDocument;
  const app = document.getElementById("app");
  if (!app) return;
  window.condenseCharts = [];
  app.textContent = "";
  const n = doc.sessions.length;
  app.append(
    h("header", {}, h("h1", {}, "condense report"), h("p", { class: "dim" }, `${n} session${n === 1 ? "" : "s"}, ${doc.schema}, condense ${doc.version}`)),
  );
  if (n > 1 || doc.failures.length > 0) app.append(archiveTable(doc));
  const charts: (() => void)[] = [];
  for (const s of doc.sessions) app.append(sessionSection(s, charts));
  for (const draw of charts) draw();
}

/**
 * The table of sessions, sortable by each numeric column, each row linking to its section. It leads
 * with what the session's Pi sends (`run.target`: stock Pi's `piOnly` unless pi-condense is
 * installed and on) now → after run → reclaim → after compact, every figure against that one
 * "now"; the other Pi's figures follow. Sessions sharing a short id are told apart by file name.
 */
export function archiveTable(doc: ReportDocument): HTMLElement {
  // [label, path of the figure for a session, unit]; "reclaim" is computed, "pi" is text.
  const sent = (s: SessionReport, of: "run" | "compact") => (s[of].target.used === "pi" ? `${of}.context.piOnly` : `${of}.context`);
  const other = (s: SessionReport, of: "run" | "compact") => (s[of].target.used === "pi" ? `${of}.context` : `${of}.context.piOnly`);
  const cols: [string, (s: SessionReport) => string, "int" | "usd" | "bytes" | "pct" | "text"][] = [
    ["size", () => "bytes", "bytes"],
    ["tool turns", () => "budget.summary.toolTurns", "int"],
    ["peak reported", () => "budget.summary.peakTokens", "int"],
    ["Pi", () => "pi", "text"],
    ["now", (s) => `${sent(s, "run")}.before.tokens`, "int"],
    ["after run", (s) => `${sent(s, "run")}.after.tokens`, "int"],
    ["reclaim", () => "reclaim", "pct"],
    ["after compact", (s) => `${sent(s, "compact")}.after.tokens`, "int"],
    ["other Pi now", (s) => `${other(s, "run")}.before.tokens`, "int"],
    ["other Pi after run", (s) => `${other(s, "run")}.after.tokens`, "int"],
    ["other Pi after compact", (s) => `${other(s, "compact")}.after.tokens`, "int"],
    ["cost", () => "usage.cost", "usd"],
  ];
  const head = h(
    "tr",
    {},
    h("th", { "data-sort": "text" }, "session"),
    ...cols.map(([label, , unit]) =>
      h("th", { "data-sort": unit === "text" ? "text" : "number", ...(label.startsWith("other Pi") ? { class: "dim" } : {}) }, label),
    ),
  );
  const body = h("tbody", {});
  const shared = new Map<string, number>();
  for (const s of doc.sessions) if (s.label.shortId) shared.set(s.label.shortId, (shared.get(s.label.shortId) ?? 0) + 1);
  for (const s of doc.sessions) {
    const byFile = !s.label.shortId || (shared.get(s.label.shortId) ?? 0) > 1;
    const link = h("a", { href: `#${s.anchor}`, title: s.label.title }, sessionTitle(s, 40, byFile));
    const cells = cols.map(([label, pathOf, unit]) => {
      const dim = label.startsWith("other Pi") ? { class: "dim" } : {};
      const path = pathOf(s);
      if (path === "pi") {
        const pi = s.run.target.used === "pi" ? "stock Pi" : "extension";
        return h("td", { "data-sort-value": pi, title: s.run.target.reason }, pi);
      }
      if (path !== "reclaim")
        return h("td", { "data-sort-value": String(pick(s, path) ?? ""), ...dim }, figure(s, path, unit as "int" | "usd" | "bytes" | "pct"));
      const { before, after } = pick(s, sent(s, "run")) as { before: { tokens: number }; after: { tokens: number } };
      const pct = before.tokens > 0 ? (100 * (before.tokens - after.tokens)) / before.tokens : 0;
      // Sorted by the tokens reclaimed, the figure the cell leads with (the share follows it).
      return h("td", { "data-sort-value": String(before.tokens - after.tokens) }, `${fmt(before.tokens - after.tokens, "int")} (${fmt(pct, "pct")})`);
    });
    body.append(
      h("tr", { "data-session": s.anchor, "data-index": body.children.length }, h("td", { "data-sort-value": s.label.title || s.session }, link), ...cells),
    );
  }
  // A failure's message names its file already (`<path>: no session header …`): the path once.
  for (const f of doc.failures) {
    const text = f.error.startsWith(`${f.session}: `) ? f.error : `${f.session}: ${f.error}`;
    body.append(h("tr", { class: "failed" }, h("td", { colspan: cols.length + 1 }, text)));
  }
  const table = h("table", { class: "sessions" }, h("thead", {}, head), body);
  for (const [i, th] of [...head.querySelectorAll("th")].entries()) {
    th.tabIndex = 0;
    th.addEventListener("click", () => sortRows(table, i));
    th.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") sortRows(table, i);
    });
  }
  const t = doc.totals;
  const totals = `${t.sessions} sessions${t.failed ? `, ${t.failed} failed` : ""} · ${fmt(t.bytes, "bytes")} · ${fmt(t.requests, "int")} requests · ${fmt(t.cost, "usd")}`;
  return h(
    "section",
    { id: "sessions" },
    h("h2", {}, "Sessions"),
    h(
      "p",
      { class: "dim" },
      `${totals} · now → after run → reclaim → after compact: ~tokens the session's Pi sends (stock Pi unless pi-condense is installed and on); ` +
        "other Pi: the same for the other one · click a column to sort",
    ),
    h("div", { class: "scroll" }, table),
  );
}

/** Sort the table's rows by column `i` (numbers descending first, then ascending on a second click). */
export function sortRows(table: HTMLElement, i: number): void {
  const body = table.querySelector("tbody");
  const th = table.querySelectorAll("th")[i];
  if (!body || !th) return;
  const numeric = th.getAttribute("data-sort") === "number";
  const descending = th.getAttribute("aria-sort") !== "descending";
  for (const x of table.querySelectorAll("th")) x.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const rows = [...body.querySelectorAll("tr[data-session]")] as HTMLElement[];
  const key = (r: HTMLElement) => r.children[i]?.getAttribute("data-sort-value") ?? "";
  rows.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    const order = numeric ? (x === "" ? -Infinity : Number(x)) - (y === "" ? -Infinity : Number(y)) : x.localeCompare(y);
    // Ties keep the order of the document.
    return (descending ? -order : order) || Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index"));
  });
  for (const r of rows) body.insertBefore(r, body.querySelector("tr.failed"));
}

/** One session: title, figures, the chart per turn, before → after, events, largest outputs. */
export function sessionSection(s: SessionReport, charts: (() => void)[]): HTMLElement {
  const chart = h("div", { class: "chart" });
  charts.push(() => turnChart(s, chart));
  const notes =
    s.warnings.length > 0
      ? h("details", { class: "warnings" }, h("summary", {}, `${s.warnings.length} warning(s)`), ...s.warnings.map((w) => h("p", {}, w)))
      : null;
  const v1 =
    s.fileVersion < 3 ? h("p", { class: "dim" }, `A v${s.fileVersion} file: run and compact need --migrate; the figures are for the migrated session.`) : null;
  return h(
    "section",
    { id: s.anchor, class: "session", "data-session": s.anchor },
    h("h2", { title: s.label.title }, sessionTitle(s, 160)),
    h("p", { class: "path" }, s.session),
    v1,
    figures(s),
    h("h3", {}, "Context per tool-using turn"),
    chart,
    h("p", { class: "dim" }, chartNote(s)),
    h("h3", {}, "Context before → after"),
    contextBars(s),
    h("h3", {}, "Events"),
    eventsTable(s),
    h("h3", {}, `Largest tool outputs in the context (${s.largestOutputs.length})`),
    outputsTable(s),
    notes,
  );
}

/** The headline figures of a session. */
export function figures(s: SessionReport): HTMLElement {
  const card = (label: string, ...value: Child[]) => h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value" }, ...value));
  const b = s.budget.summary;
  const m = s.metrics;
  return h(
    "div",
    { class: "cards" },
    card("file", figure(s, "bytes", "bytes"), ` · v${s.fileVersion}`),
    card("requests · cost", figure(s, "usage.requests"), " · ", figure(s, "usage.cost", "usd")),
    card("last reported request", figure(s, "metrics.reportedUsage.tokens"), " tokens"),
    card(
      "peak reported",
      figure(s, "budget.summary.peakTokens"),
      b.peakTurn !== null ? ` at turn ${b.peakTurn}` : b.peakLine !== null ? ` at line ${b.peakLine}` : "",
    ),
    card(
      "pruning flushes",
      figure(s, "budget.summary.flushes"),
      " (",
      figure(s, "budget.summary.budgetFlushes"),
      " budget, ",
      figure(s, "budget.summary.deltaFlushes"),
      " delta)",
    ),
    card("Pi would compact", piCompactsText(s)),
    card("open-cycle thinking", figure(s, "metrics.openCycleThinkingTokens"), " tokens"),
    card("frontier gap", figure(s, "metrics.frontierGapTokens"), " tokens"),
    card("largest chain", figure(s, "metrics.largestChainSharePct", "pct")),
    card("diagnostics", figure(s, "metrics.diagnosticFaults"), m.diagnosticFaults > 0 ? " faults" : ""),
  );
}

/** What the chart shows and where its levels come from. */
export function chartNote(s: SessionReport): string {
  const c = s.budget.compaction;
  const marks = [`${s.markers.compactions.length} recorded compaction(s)`, `${s.markers.modelSwitches.length} model switch(es)`].join(", ");
  return (
    `Reported: the provider's usage of each request (input + output + cache). Estimate: Pi's per-message estimate of the same context. ` +
    `Pi before request: what Pi's auto-compaction compares with window − reserveTokens (${c.enabled ? fmt(c.reserveTokens, "int") : "auto-compaction off"}). ` +
    `Budget level: min(${fmt(s.budget.maxBudgetWindow, "int")}, ${s.budget.threshold ?? "off"} × window); delta ${s.budget.delta ?? "off"}. Vertical lines: ${marks}.`
  );
}

/** Tokens on an axis: 950, 12k, 1.2M. */
export function shortTokens(v: number): string {
  if (Math.abs(v) >= 1_000_000) return `${(v / 1_000_000).toFixed(1)}M`;
  if (Math.abs(v) >= 1_000) return `${Math.round(v / 1_000)}k`;
  return String(Math.round(v));
}

/** The series of the chart per turn, from the budget rows: label, values, colour, and whether it is drawn as marks only. */
export function turnSeries(s: SessionReport): { label: string; values: (number | null)[]; color: string; marks: boolean; dash?: number[] }[] {
  const rows = s.budget.rows;
  const reserve = s.budget.compaction.enabled ? s.budget.compaction.reserveTokens : null;
  return [
    { label: "reported", values: rows.map((r) => r.tokens), color: "#1f6feb", marks: false },
    { label: "estimate", values: rows.map((r) => r.estimateTokens), color: "#8250df", marks: false, dash: [6, 3] },
    { label: "Pi before request", values: rows.map((r) => r.piTokens), color: "#6e7781", marks: false, dash: [2, 3] },
    { label: "budget level", values: rows.map((r) => r.level), color: "#d29922", marks: false, dash: [10, 4] },
    {
      label: "Pi compaction level",
      values: rows.map((r) => (r.window !== null && reserve !== null ? r.window - reserve : null)),
      color: "#cf222e",
      marks: false,
      dash: [10, 4],
    },
    { label: "budget fires", values: rows.map((r) => (r.trigger === "budget" ? r.tokens : null)), color: "#d29922", marks: true },
    { label: "delta fires", values: rows.map((r) => (r.trigger === "delta" ? r.tokens : null)), color: "#2da44e", marks: true },
    { label: "Pi compacts", values: rows.map((r) => (r.piCompaction !== null ? r.piTokens : null)), color: "#cf222e", marks: true },
  ];
}

/** The chart of context per tool-using turn (uPlot), with recorded compactions and model switches as vertical lines. */
export function turnChart(s: SessionReport, container: HTMLElement): void {
  const rows = s.budget.rows;
  if (rows.length === 0) {
    container.append(h("p", { class: "dim" }, "No tool-using turns on the branch."));
    return;
  }
  const series = turnSeries(s).filter((x) => x.values.some((v) => v !== null));
  const data: (number | null)[][] = [rows.map((r) => r.turn), ...series.map((x) => x.values)];
  const lines = [
    ...s.markers.compactions.map((m) => ({ turn: m.turn, text: "compaction", color: "#cf222e" })),
    ...s.markers.modelSwitches.map((m) => ({ turn: m.turn, text: m.to, color: "#57606a" })),
  ].filter((m) => m.turn !== null);
  const opts: uPlotType.Options = {
    width: Math.max(320, container.clientWidth || 900),
    height: 320,
    scales: { x: { time: false } },
    axes: [{ label: "tool-using turn" }, { label: "tokens", size: 60, values: (_u, vals) => vals.map((v) => shortTokens(v)) }],
    series: [
      { label: "turn" },
      ...series.map((x) =>
        x.marks
          ? { label: x.label, stroke: x.color, paths: () => null, points: { show: true, size: 8, fill: x.color } }
          : { label: x.label, stroke: x.color, width: x.label === "reported" ? 2 : 1.5, dash: x.dash, points: { show: false }, spanGaps: false },
      ),
    ],
    hooks: { draw: [(u) => drawMarkers(u, lines)] },
  };
  const chart = new window.uPlot(opts, data as uPlotType.AlignedData, container);
  window.condenseCharts?.push({
    session: s.anchor,
    chart: "turns",
    series: ["turn", ...series.map((x) => x.label)],
    data: chart.data.map((a) => Array.from(a, (v) => v ?? null)),
  });
  window.addEventListener("resize", () => chart.setSize({ width: Math.max(320, container.clientWidth || 900), height: 320 }));
}

/** Vertical lines at turns, labelled, over the plotting area. */
export function drawMarkers(u: uPlotType, lines: { turn: number | null; text: string; color: string }[]): void {
  const ctx = u.ctx;
  const { top, height } = u.bbox;
  ctx.save();
  ctx.font = `${Math.round(11 * devicePixelRatio)}px sans-serif`;
  for (const m of lines) {
    if (m.turn === null) continue;
    const x = Math.round(u.valToPos(m.turn, "x", true));
    ctx.strokeStyle = m.color;
    ctx.fillStyle = m.color;
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.fillText(m.text, x + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
  }
  ctx.restore();
}

/**
 * Where Pi itself would auto-compact: the turns, "never", "unknown" when no place was found but a
 * turn's window is unknown (as `budget` and `compact --if-over` say), or "off".
 */
export function piCompactsText(s: SessionReport): string {
  const b = s.budget;
  if (!b.compaction.enabled) return "off (compaction.enabled: false)";
  const unknown = b.rows.some((r) => r.window === null);
  if (b.summary.piCompactions.length === 0) return unknown ? "unknown (window unknown)" : "never";
  // The label of budget-compaction.ts `piCompactionLabel` (this function is serialized into the page: no imports).
  const at = b.summary.piCompactions.map((p) => (p.turn !== null ? `turn ${p.turn}` : `line ${p.line ?? "—"}`));
  return `at ${at.join(", ")}${unknown ? " (window unknown on some turns)" : ""}`;
}

/** Context before → after `run` (with the extension, and as stock Pi sends it) and after `compact`, as bars. */
export function contextBars(s: SessionReport): HTMLElement {
  const groups: [string, string, string][] = [
    ["run — Pi with the extension switched on", "run.context.before.tokens", "run.context.after.tokens"],
    ["run — stock Pi, without the extension", "run.context.piOnly.before.tokens", "run.context.piOnly.after.tokens"],
    ["compact — Pi's own compaction, with the extension switched on", "compact.context.before.tokens", "compact.context.after.tokens"],
    ["compact — Pi's own compaction, stock Pi", "compact.context.piOnly.before.tokens", "compact.context.piOnly.after.tokens"],
  ];
  const value = (path: string) => (typeof pick(s, path) === "number" ? (pick(s, path) as number) : 0);
  const max = Math.max(1, ...groups.flatMap(([, b, a]) => [value(b), value(a)]));
  const bar = (path: string, kind: string) =>
    h(
      "div",
      { class: "bar-row" },
      h("span", { class: "bar-label" }, kind),
      h("div", { class: `bar ${kind}`, style: `width:${(100 * value(path)) / max}%`, "data-bar": path }),
      figure(s, path),
    );
  const out = h("div", { class: "bars" });
  for (const [label, before, after] of groups) {
    out.append(
      h(
        "div",
        { class: "bar-group" },
        h("div", { class: "bar-title" }, `${label} ${change(value(before), value(after))}`),
        bar(before, "before"),
        bar(after, "after"),
      ),
    );
  }
  const c = s.compact;
  const compactNote =
    c.status === "compacted"
      ? `compact keeps from line ${c.firstKeptLine ?? "—"} (${c.messagesToSummarize ?? 0} messages summarized)`
      : `compact: ${c.reason ?? c.status}`;
  out.append(h("p", { class: "dim" }, `run writes for: ${s.run.target.used} (${s.run.target.reason}); summarizer ${s.run.summarizer}. ${compactNote}.`));
  window.condenseCharts?.push({
    session: s.anchor,
    chart: "before-after",
    series: groups.flatMap(([, b, a]) => [b, a]),
    data: [groups.flatMap(([, b, a]) => [value(b), value(a)])],
  });
  return out;
}

/** Recorded compactions, model switches, the first pruning flush and Pi's auto-compaction points, by turn. */
export function eventsTable(s: SessionReport): HTMLElement {
  const c = s.markers.compactions.map((m, i) => ({
    turn: m.turn,
    path: `markers.compactions.${i}.turn`,
    what: "compaction recorded",
    detail: `entry ${m.entryId}, line ${m.line ?? "—"}, tokensBefore ${fmt(m.tokensBefore, "int")}`,
  }));
  const m = s.markers.modelSwitches.map((x, i) => ({
    turn: x.turn,
    path: `markers.modelSwitches.${i}.turn`,
    what: "model switch",
    detail: `${x.from} → ${x.to} (line ${x.line ?? "—"})`,
  }));
  const f = s.budget.summary.firstFlush;
  const first = f
    ? [
        {
          turn: f.turn,
          path: "budget.summary.firstFlush.turn",
          what: `first pruning flush (${f.trigger})`,
          detail: `entry ${f.entryId}, line ${f.line ?? "—"}`,
        },
      ]
    : [];
  const pi = s.budget.summary.piCompactions.map((p, i) => ({
    turn: p.turn,
    path: `budget.summary.piCompactions.${i}.turn`,
    what: `Pi would auto-compact (${p.reason})`,
    detail: `~${fmt(p.tokens, "int")} > ${fmt(p.level, "int")} (line ${p.line ?? "—"}${p.check === "after-reply" ? ", after the final reply" : p.turnIs === "next" ? ", a request without tool calls" : ""})`,
  }));
  const rows = [...c, ...m, ...first, ...pi];
  if (rows.length === 0) return h("p", { class: "dim" }, "No compaction, model switch or trigger on this branch.");
  rows.sort((a, b) => (a.turn ?? Infinity) - (b.turn ?? Infinity));
  const body = rows.map((r) => h("tr", {}, h("td", {}, figure(s, r.path)), h("td", {}, r.what), h("td", {}, r.detail)));
  return h(
    "table",
    { class: "events" },
    h("thead", {}, h("tr", {}, h("th", {}, "turn"), h("th", {}, "event"), h("th", {}, "detail"))),
    h("tbody", {}, ...body),
  );
}

/** The largest tool outputs in the context, with the ref and the command that recover each after `run`. */
export function outputsTable(s: SessionReport): HTMLElement {
  if (s.largestOutputs.length === 0) return h("p", { class: "dim" }, "No tool output in the context.");
  const head = h("tr", {}, ...["ref", "tool", "argument", "chars", "~tokens", "status", "line", "recover after run"].map((x) => h("th", {}, x)));
  const body = s.largestOutputs.map((o, i) =>
    h(
      "tr",
      {},
      h("td", {}, o.ref ?? "—", o.refNow === null && o.ref !== null ? h("span", { class: "dim" }, " (new)") : null),
      h("td", {}, o.toolName),
      h("td", { class: "arg" }, o.argument ?? ""),
      h("td", {}, figure(s, `largestOutputs.${i}.chars`)),
      h("td", {}, figure(s, `largestOutputs.${i}.tokens`)),
      h("td", {}, o.isError ? "error" : "ok"),
      h("td", {}, figure(s, `largestOutputs.${i}.line`)),
      h("td", {}, o.query ? h("code", {}, o.query) : h("span", { class: "dim" }, "kept raw")),
    ),
  );
  return h("table", { class: "outputs" }, h("thead", {}, head), h("tbody", {}, ...body));
}

/** The functions of the page script, in the order they are written into it; `reportMain` runs last. */
export const CLIENT_FUNCTIONS = [
  h,
  fmt,
  pick,
  figure,
  sessionTitle,
  change,
  reportMain,
  archiveTable,
  sortRows,
  sessionSection,
  figures,
  chartNote,
  shortTokens,
  turnSeries,
  turnChart,
  drawMarkers,
  piCompactsText,
  contextBars,
  eventsTable,
  outputsTable,
];
