// The hub's public guides: the README and docs/*.md, read-only and open to anonymous callers
// (seed 000: anonymous MCP and browser access can read the hub's lessons, never write).
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { BatonError } from '@baton/protocol'

// src/guides and dist/guides both sit four levels below the repository root.
const ROOT = path.resolve(import.meta.dirname, '../../../..')

/** One guide: a stable name, its title (its first heading) and where it is read from. */
export interface Guide {
  name: string
  title: string
  file: string
}

function titleOf(text: string, fallback: string): string {
  const m = /^#\s+(.+)$/m.exec(text)
  return m?.[1]?.trim() ?? fallback
}

function scan(): Guide[] {
  const guides: Guide[] = []
  const readme = path.join(ROOT, 'README.md')
  try {
    guides.push({
      name: 'readme',
      title: titleOf(readFileSync(readme, 'utf8'), 'README'),
      file: readme,
    })
  } catch {
    // a hub installed without its README serves the docs alone
  }
  let names: string[] = []
  try {
    names = readdirSync(path.join(ROOT, 'docs')).filter((n) => /^[a-z0-9-]+\.md$/.test(n))
  } catch {
    names = []
  }
  for (const n of names.sort()) {
    const file = path.join(ROOT, 'docs', n)
    const name = n.slice(0, -3)
    guides.push({ name, title: titleOf(readFileSync(file, 'utf8'), name), file })
  }
  return guides
}

/** Every guide the hub serves, by name; MCP resources can list these. */
export const GUIDES: readonly Guide[] = Object.freeze(scan())

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
  return { name: guide.name, title: guide.title, markdown: readFileSync(guide.file, 'utf8') }
}

/** Guides whose text holds every word of `q` (case-insensitive), each with a few matching lines. */
export function searchGuides(q: string): {
  results: (GuideSummary & { matches: string[] })[]
} {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean).slice(0, 8)
  const results: (GuideSummary & { matches: string[] })[] = []
  for (const g of GUIDES) {
    const text = readFileSync(g.file, 'utf8')
    const lower = text.toLowerCase()
    if (!words.every((w) => lower.includes(w))) continue
    const matches = text
      .split('\n')
      .filter((line) => words.some((w) => line.toLowerCase().includes(w)))
      .slice(0, 5)
      .map((line) => line.slice(0, 300))
    results.push({ name: g.name, title: g.title, matches })
  }
  return { results }
}
