import { BatonError } from '@baton/protocol'
import type { FastifyInstance } from 'fastify'
import MarkdownIt from 'markdown-it'
import { GUIDES, listGuides, readGuide } from './guides.js'
import { GUIDE_CSS } from './style.js'

const STYLESHEET = '/docs/guides.css'

/**
 * Guide pages carry no script and no remote content: their one stylesheet is served by the hub,
 * as the dashboard's is, and nothing else may load.
 */
const HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  )
}

// Raw HTML in a guide is shown as text (html: false), and markdown-it's validateLink refuses
// javascript:, vbscript:, file: and data: targets, which then stay text too. Images are off: a
// guide page loads nothing remote.
const md = new MarkdownIt({ html: false, linkify: false, typographer: false }).disable('image')

/**
 * A link as the guide page should carry it: another guide's file (`docs/cli.md`, `cli.md`,
 * `README.md`, with any `#anchor`) becomes its page; a link into the repository that the hub does
 * not serve becomes no link; absolute and in-page links stay.
 */
export function toGuideHref(href: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) {
    return href
  }
  const m = /^(?:\.\/|\.\.\/)*(?:docs\/)?([A-Za-z0-9-]+)\.md(#[^\s]*)?$/.exec(href)
  if (!m) return undefined
  const name = m[1] === 'README' ? 'readme' : m[1]!
  if (!GUIDES.some((g) => g.name === name)) return undefined
  return `/docs/${name}${m[2] ?? ''}`
}

/** GitHub's heading anchors: lower case, spaces to hyphens, punctuation dropped. */
function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-')
}

md.renderer.rules.link_open = (tokens, i, options, _env, self) => {
  const token = tokens[i]!
  const href = toGuideHref(String(token.attrGet('href') ?? ''))
  if (href === undefined) {
    token.attrs = []
    token.meta = { ...token.meta, dropped: true }
    return ''
  }
  token.attrSet('href', href)
  if (/^https?:/i.test(href)) token.attrSet('rel', 'noreferrer')
  return self.renderToken(tokens, i, options)
}
md.renderer.rules.link_close = (tokens, i, options, _env, self) => {
  // The matching opener is the nearest unclosed link_open before this closer.
  let depth = 0
  for (let j = i - 1; j >= 0; j--) {
    const t = tokens[j]!
    if (t.type === 'link_close') depth++
    else if (t.type === 'link_open' && depth-- === 0) return t.meta?.dropped ? '' : '</a>'
  }
  return self.renderToken(tokens, i, options)
}
md.renderer.rules.table_open = () => '<div class="table"><table>\n'
md.renderer.rules.table_close = () => '</table></div>\n'
md.core.ruler.push('heading_ids', (state) => {
  const seen = new Map<string, number>()
  state.tokens.forEach((token, i) => {
    if (token.type !== 'heading_open') return
    const base = slug(state.tokens[i + 1]?.content ?? '')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    token.attrSet('id', n === 0 ? base : `${base}-${n}`)
  })
})

/** A guide's Markdown as HTML: CommonMark with tables, raw HTML escaped, links made safe. */
export function renderMarkdown(markdown: string): string {
  return md.render(markdown)
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · Baton guides</title>
<link rel="stylesheet" href="${STYLESHEET}">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/docs"><span class="brand-mark" aria-hidden="true"></span> Baton guides</a></header>
<main id="main" tabindex="-1"><article>
${body}
</article></main>
</body>
</html>
`
}

/** The guides as HTML for browsers at `/docs` and `/docs/:name`, read-only and anonymous. */
export function registerGuidePages(app: FastifyInstance): void {
  app.get(STYLESHEET, async (_req, reply) => {
    reply.headers({ ...HEADERS, 'content-type': 'text/css; charset=utf-8' })
    return GUIDE_CSS
  })
  app.get('/docs', async (_req, reply) => {
    reply.headers(HEADERS)
    const items = listGuides()
      .guides.map(
        (g) =>
          `<li><a href="/docs/${encodeURIComponent(g.name)}">${escapeHtml(g.title)}</a><span class="name">${escapeHtml(g.name)}</span></li>`,
      )
      .join('\n')
    return page(
      'Baton guides',
      `<h1>Baton guides</h1>\n<p>Start with <a href="/docs/connect">connecting an agent</a>, then <a href="/docs/walkthrough">the two-agent walkthrough</a>. Agents read the same guides over MCP as <code>baton://guides/{name}</code> resources.</p>\n<ul class="index">\n${items}\n</ul>`,
    )
  })
  // Anyone may ask for a guide as often as they like: each is read and rendered once, on its first
  // request, and the cache holds one page per guide the hub serves, nothing a caller names.
  const rendered = new Map<string, string>()
  app.get<{ Params: { name: string } }>('/docs/:name', async (req, reply) => {
    const known = rendered.get(req.params.name)
    if (known !== undefined) return reply.headers(HEADERS).send(known)
    let guide: ReturnType<typeof readGuide>
    try {
      guide = readGuide(req.params.name)
    } catch (error) {
      if (error instanceof BatonError) {
        reply.code(404).headers(HEADERS)
        return page('Not found', '<h1>No such guide</h1>\n<p><a href="/docs">All guides</a></p>')
      }
      throw error
    }
    const html = page(guide.title, renderMarkdown(guide.markdown))
    rendered.set(guide.name, html)
    return reply.headers(HEADERS).send(html)
  })
}
