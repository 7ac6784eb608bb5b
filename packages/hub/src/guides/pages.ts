import { BatonError } from '@baton/protocol'
import type { FastifyInstance } from 'fastify'
import { listGuides, readGuide } from './guides.js'

/** Guide pages carry no script, no style and no remote content: the text is all there is. */
const HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  )
}

function inline(text: string): string {
  // Everything is escaped first; only backtick code spans become markup, around escaped text.
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>')
}

/** A small Markdown subset to HTML: headings, fenced code, lists and paragraphs; all else is text. */
export function renderMarkdown(markdown: string): string {
  const out: string[] = []
  let para: string[] = []
  let list: string[] = []
  let code: string[] | undefined
  const flush = () => {
    if (para.length) out.push(`<p>${inline(para.join(' '))}</p>`)
    if (list.length) out.push(`<ul>${list.map((l) => `<li>${inline(l)}</li>`).join('')}</ul>`)
    para = []
    list = []
  }
  for (const line of markdown.split('\n')) {
    if (code) {
      if (line.startsWith('```')) {
        out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`)
        code = undefined
      } else code.push(line)
      continue
    }
    if (line.startsWith('```')) {
      flush()
      code = []
      continue
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line)
    if (heading) {
      flush()
      const level = heading[1]!.length
      out.push(`<h${level}>${inline(heading[2]!)}</h${level}>`)
      continue
    }
    const item = /^\s*[-*]\s+(.*)$/.exec(line)
    if (item) {
      if (para.length) flush()
      list.push(item[1]!)
      continue
    }
    if (line.trim() === '') flush()
    else if (list.length) list[list.length - 1] += ` ${line.trim()}`
    else para.push(line.trim())
  }
  if (code) out.push(`<pre><code>${escapeHtml(code.join('\n'))}</code></pre>`)
  flush()
  return out.join('\n')
}

function page(title: string, body: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body>\n<nav><a href="/docs">Guides</a></nav>\n${body}\n</body></html>\n`
}

/** The guides as HTML for browsers at `/docs` and `/docs/:name`, read-only and anonymous. */
export function registerGuidePages(app: FastifyInstance): void {
  app.get('/docs', async (_req, reply) => {
    reply.headers(HEADERS)
    const items = listGuides()
      .guides.map(
        (g) => `<li><a href="/docs/${encodeURIComponent(g.name)}">${escapeHtml(g.title)}</a></li>`,
      )
      .join('\n')
    return page('Baton guides', `<h1>Baton guides</h1>\n<ul>\n${items}\n</ul>`)
  })
  app.get<{ Params: { name: string } }>('/docs/:name', async (req, reply) => {
    let guide: ReturnType<typeof readGuide>
    try {
      guide = readGuide(req.params.name)
    } catch (error) {
      if (error instanceof BatonError) {
        reply.code(404).headers(HEADERS)
        return page('Not found', '<h1>No such guide</h1>')
      }
      throw error
    }
    reply.headers(HEADERS)
    return page(guide.title, renderMarkdown(guide.markdown))
  })
}
