// The hub's public guides: the README and docs/*.md, read-only and open to anonymous callers
// (seed 000: anonymous MCP and browser access can read the hub's lessons, never write).
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { BatonError } from '@baton/protocol'

/**
 * Where the guide sources are read from: the copy the build ships inside the package
 * (`dist/guides/sources`, beside this module, holding `README.md` and `docs/`), so an installed
 * hub serves them; in a checkout run from its TypeScript sources, the repository itself.
 */
const SHIPPED = path.join(import.meta.dirname, 'sources')
const ROOT = existsSync(SHIPPED) ? SHIPPED : path.resolve(import.meta.dirname, '../../../..')

/** One guide: a stable name, its title (its first heading) and its Markdown text. */
export interface Guide {
  name: string
  title: string
  markdown: string
}

function titleOf(text: string, fallback: string): string {
  const m = /^#\s+(.+)$/m.exec(text)
  return m?.[1]?.trim() ?? fallback
}

// Each source is read once, when the hub loads this module, and kept: no anonymous list, read or
// search touches the disk (about 250 KB of Markdown in all).
function scan(): Guide[] {
  const guides: Guide[] = []
  try {
    const markdown = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
    guides.push({ name: 'readme', title: titleOf(markdown, 'README'), markdown })
  } catch {
    // a hub without its README serves the docs alone
  }
  let names: string[] = []
  try {
    names = readdirSync(path.join(ROOT, 'docs')).filter((n) => /^[a-z0-9-]+\.md$/.test(n))
  } catch {
    names = []
  }
  for (const n of names.sort()) {
    const markdown = readFileSync(path.join(ROOT, 'docs', n), 'utf8')
    const name = n.slice(0, -3)
    guides.push({ name, title: titleOf(markdown, name), markdown })
  }
  return guides
}

/** Every guide the hub serves, by name; MCP resources can list these. */
export const GUIDES: readonly Guide[] = Object.freeze(scan())

/** Each guide's text in lower case, for search, made once. */
const LOWER = new Map(GUIDES.map((g) => [g.name, g.markdown.toLowerCase()]))

/** A guide's name and title, as listings show it. */
export interface GuideSummary {
  name: string
  title: string
}

/** The guides, without their text. */
export function listGuides(): { guides: GuideSummary[] } {
  return { guides: GUIDES.map(({ name, title }) => ({ name, title })) }
}

/** One guide's Markdown text; an unknown name is `not_found`, never a path on disk. */
export function readGuide(name: string): GuideSummary & { markdown: string } {
  const guide = GUIDES.find((g) => g.name === name)
  if (!guide) throw new BatonError('not_found', `No guide ${JSON.stringify(name)}`)
  return { name: guide.name, title: guide.title, markdown: guide.markdown }
}

/** Guides whose text holds every word of `q` (case-insensitive), each with a few matching lines. */
export function searchGuides(q: string): {
  results: (GuideSummary & { matches: string[] })[]
} {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean).slice(0, 8)
  const results: (GuideSummary & { matches: string[] })[] = []
  for (const g of GUIDES) {
    const lower = LOWER.get(g.name)!
    if (!words.every((w) => lower.includes(w))) continue
    const matches = g.markdown
      .split('\n')
      .filter((line) => words.some((w) => line.toLowerCase().includes(w)))
      .slice(0, 5)
      .map((line) => line.slice(0, 300))
    results.push({ name: g.name, title: g.title, matches })
  }
  return { results }
}
