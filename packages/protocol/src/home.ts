import { z } from 'zod'

/** Home file limits; the file size is overridable by the hub's configuration. */
export const HOME_LIMITS = {
  maxPathChars: 256,
  /** Largest file content, in UTF-8 bytes. */
  maxFileBytes: 256 * 1024,
  /** Files answered per listing page when `limit` is not given. */
  defaultPageSize: 100,
  /** Most files answered per listing page; a larger `limit` is a 400. */
  maxPageSize: 1000,
} as const

const SEGMENT = '[A-Za-z0-9._-]+'
const PATH_RE = new RegExp(`^${SEGMENT}(?:/${SEGMENT})*$`)

/**
 * Tells whether a home path is valid: 1–256 characters, `/`-separated segments of
 * `[A-Za-z0-9._-]`, no empty, `.` or `..` segment, no leading `/`.
 *
 * @example isHomePath('handoff/RUN_ID/owner.json') // true
 */
export function isHomePath(path: unknown): path is string {
  return (
    typeof path === 'string' &&
    path.length >= 1 &&
    path.length <= HOME_LIMITS.maxPathChars &&
    PATH_RE.test(path) &&
    !path.split('/').some((s) => s === '.' || s === '..')
  )
}

/**
 * The body of `PUT /v1/home/file` (seed 000: `handoff-owner-checkpoint.json` and others). Revision
 * 0 creates only; otherwise the write commits only at `expectedRevision`. Reconciliation: when the
 * file already holds exactly `content` at `expectedRevision + 1`, the write is answered as the
 * committed write it repeats, so retrying after a lost answer is safe.
 */
export const WriteHomeFileInput = z.strictObject({
  path: z.string(),
  /** 0 creates only; otherwise the revision the caller last read. */
  expectedRevision: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  content: z.string(),
})

/** A parsed home write. */
export type WriteHomeFileInput = z.infer<typeof WriteHomeFileInput>

/** The answer of a home write. */
export interface HomeFileWriteView {
  path: string
  revision: number
  size: number
  updatedAt: string
}

/** The answer of `GET /v1/home/file`. */
export interface HomeFileView extends HomeFileWriteView {
  content: string
}

/** One entry of `GET /v1/home/files`: no content. */
export interface HomeFileEntryView {
  path: string
  revision: number
  size: number
  updatedAt: string
}

/** The answer of `GET /v1/home/files`, ordered by path; `nextAfter` is null on the last page. */
export interface HomeFileListView {
  files: HomeFileEntryView[]
  nextAfter: string | null
}

/** The answer of `DELETE /v1/home/file`. */
export interface HomeFileDeleteView {
  path: string
  /** The revision that was deleted. */
  revision: number
  deleted: true
}
