/** The stylesheet of the `condense report` page (light and dark, readable printed). */
export const REPORT_STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --dim: #59636e; --bg: #ffffff; --card: #f6f8fa; --line: #d1d9e0;
  --before: #8c959f; --after: #1f6feb; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --dim: #9198a1; --bg: #0d1117; --card: #151b23; --line: #3d444d; } }
body { margin: 0; background: var(--bg); color: var(--fg); }
main { max-width: 1200px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 0; }
h2 { font-size: 18px; margin: 32px 0 2px; overflow-wrap: anywhere; }
h3 { font-size: 15px; margin: 22px 0 8px; }
.dim, .path { color: var(--dim); }
.path { margin: 0 0 12px; font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: anywhere; }
section.session { border-top: 1px solid var(--line); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 8px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; }
.card .label { color: var(--dim); font-size: 12px; }
.card .value { font-size: 15px; }
.num { font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
td .num, table.sessions td:not(:first-child) { white-space: nowrap; }
.scroll { overflow-x: auto; }
table.sessions th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sessions th[aria-sort="descending"]::after { content: " ▼"; }
table.sessions th[aria-sort="ascending"]::after { content: " ▲"; }
tr.failed td { color: #cf222e; }
td.arg, code { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: anywhere; }
.chart { width: 100%; min-height: 320px; }
.bars { display: grid; gap: 10px; }
.bar-title { font-weight: 600; }
.bar-row { display: grid; grid-template-columns: 52px 1fr 90px; align-items: center; gap: 8px; }
.bar-row .num { text-align: right; }
.bar { height: 14px; border-radius: 3px; min-width: 1px; }
.bar.before { background: var(--before); }
.bar.after { background: var(--after); }
.bar-label { color: var(--dim); font-size: 12px; }
details.warnings { margin-top: 12px; color: var(--dim); }
@media print { .chart { break-inside: avoid; } }
`;
