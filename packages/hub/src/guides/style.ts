// The guide pages' stylesheet, served as a file so the pages' CSP allows no inline style. Its
// palette, type and tables are the dashboard's (web/assets/app.css), in light and dark.
export const GUIDE_CSS = `:root {
  --bg: #f6f7f9;
  --panel: #ffffff;
  --text: #1b1f24;
  --muted: #5b6470;
  --line: #dde1e6;
  --accent: #2457d6;
  --chip: #eef1f5;
  --focus: #f59e0b;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  --radius: 8px;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0f1216;
    --panel: #171b21;
    --text: #e6e9ee;
    --muted: #9aa4b1;
    --line: #2a313a;
    --accent: #6d94ff;
    --chip: #222932;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0;
  background: var(--bg);
  color: var(--text);
  font: 15px / 1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 4px; }
.skip { position: absolute; left: -999px; top: 0; }
.skip:focus { left: 8px; top: 8px; background: var(--panel); padding: 6px 10px; z-index: 10; }
.top {
  position: sticky;
  top: 0;
  z-index: 5;
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 8px 16px;
  padding: 8px 16px;
  background: var(--panel);
  border-bottom: 1px solid var(--line);
}
.brand { font-weight: 650; color: var(--text); text-decoration: none; white-space: nowrap; }
.brand-mark {
  display: inline-block;
  width: 10px;
  height: 10px;
  border-radius: 50%;
  background: var(--accent);
  margin-right: 4px;
}
.top a.up { color: var(--muted); text-decoration: none; padding: 8px 10px; border-radius: 6px; }
.top a.up:hover { background: var(--chip); }
main { max-width: 860px; margin: 0 auto; padding: 16px 16px 48px; }
main:focus { outline: none; }
article {
  background: var(--panel);
  border: 1px solid var(--line);
  border-radius: var(--radius);
  padding: 8px 24px 24px;
  overflow-wrap: anywhere;
}
h1 { font-size: 1.6rem; line-height: 1.25; margin: 16px 0 12px; }
h2 { font-size: 1.25rem; margin: 28px 0 8px; padding-top: 8px; border-top: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 22px 0 6px; }
h4, h5, h6 { font-size: 1rem; margin: 18px 0 6px; }
p, ul, ol { margin: 8px 0; }
ul, ol { padding-left: 1.4em; }
li + li { margin-top: 2px; }
code { font-family: var(--mono); font-size: 0.88em; background: var(--chip); border-radius: 4px; padding: 1px 4px; }
pre {
  margin: 10px 0;
  padding: 10px 12px;
  background: var(--chip);
  border-radius: 6px;
  overflow-x: auto;
  overflow-wrap: normal;
  font: 0.85rem / 1.45 var(--mono);
}
pre code { background: none; padding: 0; font-size: inherit; white-space: pre; }
.table { overflow-x: auto; margin: 10px 0; border: 1px solid var(--line); border-radius: 6px; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; overflow-wrap: normal; }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 0.8rem; color: var(--muted); font-weight: 600; white-space: nowrap; }
tr:last-child td { border-bottom: 0; }
blockquote { margin: 10px 0; padding: 2px 14px; border-left: 3px solid var(--line); color: var(--muted); }
hr { border: 0; border-top: 1px solid var(--line); margin: 20px 0; }
.index { list-style: none; padding: 0; }
.index li { padding: 8px 0; border-bottom: 1px solid var(--line); }
.index li:last-child { border-bottom: 0; }
.index .name { color: var(--muted); font-family: var(--mono); font-size: 0.85em; margin-left: 8px; }
@media (max-width: 600px) {
  main { padding: 8px 8px 32px; }
  article { padding: 4px 14px 16px; }
  h1 { font-size: 1.35rem; }
}
`
