import { BatonError } from '@baton/protocol/primitives'

/** Where a command writes; tests pass their own. */
export interface Io {
  stdout: (s: string) => void
  stderr: (s: string) => void
  /** `--json` was given to a command that prints JSON anyway: print the wire form, bare. */
  json?: boolean
}

/** The process's own streams. */
export const processIo: Io = {
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
}

/** Exit codes: 0 ok, 1 a 4xx (the caller's mistake or a refusal), 2 a 5xx or network failure, 64 usage. */
export const EXIT = { ok: 0, refused: 1, failed: 2, usage: 64 } as const

/** A usage error: the command line itself is wrong; `command` names the command it is about. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message)
  }
}

/**
 * The edit distance of two words: insertions, deletions, substitutions and swaps of two
 * neighbouring letters (`form` is one edit from `from`), each counting one.
 */
export function editDistance(a: string, b: string): number {
  let before: number[] = []
  let row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, before[j - 2]! + 1)
      }
      next[j] = d
    }
    before = row
    row = next
  }
  return row[b.length]!
}

/**
 * ` (did you mean X?)` for the candidate nearest `word` when it is near enough (at most a third
 * of the word's letters changed, and at least one allowed), else the empty string.
 */
export function didYouMean(word: string, candidates: readonly string[], prefix = ''): string {
  const limit = Math.max(1, Math.floor(word.length / 3))
  let best: { name: string; d: number } | undefined
  for (const name of new Set(candidates)) {
    const d = editDistance(word, name)
    if (d <= limit && (!best || d < best.d)) best = { name, d }
  }
  return best ? ` (did you mean ${prefix}${best.name}?)` : ''
}

/** Prints an error the house way and answers the exit code: 4xx → 1, 5xx/network → 2. */
export function reportError(error: unknown, io: Io, json: boolean): number {
  if (error instanceof UsageError) {
    io.stderr(`baton${error.command ? ` ${error.command}` : ''}: ${error.message}`)
    return EXIT.usage
  }
  if (error instanceof BatonError) {
    // The wire body, compact like every success under --json: one JSON value on one line.
    if (json) io.stdout(JSON.stringify(error.toBody()))
    else io.stderr(`baton: ${error.code}: ${error.message}\n  fix: ${error.toBody().fix ?? ''}`)
    return error.status >= 500 ? EXIT.failed : EXIT.refused
  }
  io.stderr(`baton: ${describe(error)}`)
  return EXIT.failed
}

/** An error and its chain of causes: a network failure says why (`fetch failed: ECONNREFUSED …`). */
export function describe(error: unknown): string {
  const parts: string[] = []
  let e: unknown = error
  for (let depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const { message, code } = e as { message?: unknown; code?: unknown }
    const text = typeof message === 'string' && message ? message : String(e)
    parts.push(typeof code === 'string' && !text.includes(code) ? `${code} ${text}` : text)
    e = (e as { cause?: unknown }).cause
  }
  return parts.join(': ')
}
