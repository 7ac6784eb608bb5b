import { BatonError } from '@baton/protocol'

/** Where a command writes; tests pass their own. */
export interface Io {
  stdout: (s: string) => void
  stderr: (s: string) => void
}

/** The process's own streams. */
export const processIo: Io = {
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
}

/** Exit codes: 0 ok, 1 a 4xx (the caller's mistake or a refusal), 2 a 5xx or network failure, 64 usage. */
export const EXIT = { ok: 0, refused: 1, failed: 2, usage: 64 } as const

/** A usage error: the command line itself is wrong. */
export class UsageError extends Error {}

/** Prints an error the house way and answers the exit code: 4xx → 1, 5xx/network → 2. */
export function reportError(error: unknown, io: Io, json: boolean): number {
  if (error instanceof UsageError) {
    io.stderr(`baton: ${error.message}`)
    return EXIT.usage
  }
  if (error instanceof BatonError) {
    if (json) io.stdout(JSON.stringify(error.toBody(), null, 2))
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
