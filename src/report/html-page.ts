/**
 * The `condense report --html` page: one self-contained HTML file — the `condense.report/1`
 * document embedded as JSON, the charting library's script and stylesheet inlined, the page script
 * (html-client.ts) — that needs no network when viewed. Its Content-Security-Policy allows nothing
 * to be fetched and only the page's own scripts (by hash) to run. Pure: the library's text comes
 * from the caller.
 */
import { createHash } from "node:crypto";
import { CLIENT_FUNCTIONS } from "./html-client.js";
import { REPORT_STYLE } from "./html-style.js";
import type { ReportDocument } from "./session-report.js";

/** The charting library as it is inlined: its browser bundle (defining the `uPlot` global) and its stylesheet. */
export interface ChartLibrary {
  script: string;
  style: string;
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);

/** `'sha256-…'` of an inline script, for the Content-Security-Policy. */
const scriptHash = (code: string) => `'sha256-${createHash("sha256").update(code, "utf8").digest("base64")}'`;

/**
 * Text that may stand inside `<script>` or `<style>` as is.
 * @throws Error when it holds a closing tag (a library bundle never does)
 */
function inline(text: string, tag: "script" | "style"): string {
  if (new RegExp(`</${tag}`, "i").test(text)) throw new Error(`cannot inline text holding </${tag}`);
  return text;
}

/** The page script: every client function's source, then the call that draws the page. */
export function clientScript(): string {
  return `${CLIENT_FUNCTIONS.map((f) => f.toString()).join("\n")}\nreportMain();\n`;
}

/** Bytes of a file enough to tell a page {@link reportPage} wrote (its head up to the title). */
export const REPORT_PAGE_HEAD_BYTES = 4096;

/** True when `head` (a file's first {@link REPORT_PAGE_HEAD_BYTES}) starts like a page {@link reportPage} wrote. */
export function isReportPageHead(head: string): boolean {
  return head.startsWith("<!doctype html>\n") && head.includes("<title>condense report — ");
}

/**
 * The HTML page of a report document.
 * @param library the charting library to inline
 * @returns the page (UTF-8 text)
 * @throws Error when the library's text cannot be inlined
 */
export function reportPage(doc: ReportDocument, library: ChartLibrary): string {
  // Every "<" escaped: the JSON cannot end its script element, and parses to the same value.
  const json = JSON.stringify(doc).replace(/</g, "\\u003c");
  const scripts = [inline(library.script, "script"), clientScript()];
  const csp = `default-src 'none'; script-src ${scripts.map(scriptHash).join(" ")}; style-src 'unsafe-inline'; img-src data:`;
  const one = doc.sessions.length === 1 ? doc.sessions[0] : null;
  const title = one ? [one.label.shortId, one.label.date, one.label.title].filter(Boolean).join(" ") || one.session : `${doc.sessions.length} sessions`;
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>condense report — ${escapeHtml(title)}</title>`,
    `<style>${inline(library.style, "style")}${REPORT_STYLE}</style>`,
    "</head>",
    "<body>",
    '<main id="app"><p>This page draws its charts with JavaScript; the data is in the condense-report script element.</p></main>',
    `<script type="application/json" id="condense-report">${json}</script>`,
    ...scripts.map((s) => `<script>${s}</script>`),
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
