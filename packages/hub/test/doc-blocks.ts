// Finds the code blocks of the docs marked runnable (```sh runnable admission=open): the fence's
// first word stays the language GitHub highlights by, the second marks the block, and the rest
// are options that configure the hub the block runs against.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from './support.js'

/** The languages a runnable block may be written in, and so how it is run. */
export const RUNNABLE_LANGUAGES = ['sh', 'js', 'ts'] as const

/** A runnable block: where it is, its language, its options and its text. */
export interface DocBlock {
  /** The doc, relative to the repository root. */
  file: string
  /** The line of the opening fence, 1-based. */
  line: number
  lang: (typeof RUNNABLE_LANGUAGES)[number]
  options: BlockOptions
  code: string
}

/** What a block asks of its hub. */
export interface BlockOptions {
  /** `admission=open`: new keys are approved at once; else they wait for the operator. */
  admission?: 'open' | 'approval'
  /** `admin-token`: the hub has an admin token, exported to the block as BATON_ADMIN_TOKEN. */
  adminToken?: boolean
}

/** The docs searched for runnable blocks: the README, docs/*.md and each package's README. */
export function docFiles(): string[] {
  const md = (dir: string) =>
    readdirSync(path.join(repoRoot, dir))
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(dir, f))
  const packages = readdirSync(path.join(repoRoot, 'packages'))
    .map((p) => path.join('packages', p, 'README.md'))
    .filter((f) => {
      try {
        readFileSync(path.join(repoRoot, f))
        return true
      } catch {
        return false
      }
    })
  return ['README.md', ...md('docs'), ...packages.sort()]
}

function parseOptions(words: string[], where: string): BlockOptions {
  const options: BlockOptions = {}
  for (const w of words) {
    if (w === 'admission=open' || w === 'admission=approval') {
      options.admission = w.slice('admission='.length) as 'open' | 'approval'
    } else if (w === 'admin-token') options.adminToken = true
    else throw new Error(`${where}: unknown runnable option ${w}`)
  }
  return options
}

/** Every block of a Markdown text whose fence's second word is `runnable`, in order. */
export function findRunnableBlocks(markdown: string, file: string): DocBlock[] {
  const blocks: DocBlock[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})(.*)$/.exec(lines[i]!)
    if (!open) continue
    const fence = open[1]!
    const words = open[2]!.trim().split(/\s+/).filter(Boolean)
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !lines[i]!.startsWith(fence); i++) body.push(lines[i]!)
    if (words[1] !== 'runnable') continue
    const where = `${file}:${start + 1}`
    const lang = words[0] as DocBlock['lang']
    if (!RUNNABLE_LANGUAGES.includes(lang)) {
      throw new Error(`${where}: a runnable block is sh, js or ts, not ${words[0] ?? 'unnamed'}`)
    }
    blocks.push({
      file,
      line: start + 1,
      lang,
      options: parseOptions(words.slice(2), where),
      code: `${body.join('\n')}\n`,
    })
  }
  return blocks
}

/** The hub settings a doc's blocks ask for together; blocks of one doc share one hub. */
export function hubOptions(blocks: DocBlock[]): BlockOptions {
  const merged: BlockOptions = {}
  for (const b of blocks) {
    if (b.options.admission) {
      if (merged.admission && merged.admission !== b.options.admission) {
        throw new Error(`${b.file}:${b.line}: its blocks ask for different admission modes`)
      }
      merged.admission = b.options.admission
    }
    if (b.options.adminToken) merged.adminToken = true
  }
  return merged
}
