import { z } from 'zod'
import { wholeNumber, withCode } from './codecs.js'
import { handedTrace } from './trace.js'

/** Home file limits; the file size is overridable by the hub's configuration. */
export const HOME_LIMITS = {
  maxPathChars: 256,
  /** Largest file content, in UTF-8 bytes. */
  maxFileBytes: 256 * 1024,
  /** Files answered per listing page when `limit` is not given. */
  defaultPageSize: 100,
  /** Most files answered per listing page by default; a larger `limit` is a 400. */
  maxPageSize: 1000,
} as const

// A segment of letters, digits, `.`, `_` and `-` that is not `.` or `..`.
const SEGMENT = '(?!\\.\\.?(?:/|$))[A-Za-z0-9._-]+'

/**
 * A home path: 1–256 characters, `/`-separated segments of `[A-Za-z0-9._-]`, no empty, `.` or
 * `..` segment, no leading `/`; a refusal answers `invalid_path`.
 */
export const HomePath = withCode(
  z
    .string()
    .min(1)
    .max(HOME_LIMITS.maxPathChars)
    .regex(new RegExp(`^${SEGMENT}(?:/${SEGMENT})*$`), 'a home path'),
  'invalid_path',
)

/**
 * The start of a home path, for listings: empty, or segments of `[A-Za-z0-9._-]` joined by
 * single `/`, perhaps ending in one; a refusal answers `invalid_path`.
 */
export const HomePathPrefix = withCode(
  z
    .string()
    .max(HOME_LIMITS.maxPathChars)
    .regex(/^(?:[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*\/?)?$/, 'the start of a home path'),
  'invalid_path',
)

/**
 * Tells whether a home path is valid (see {@link HomePath}).
 *
 * @example isHomePath('handoff/RUN_ID/owner.json') // true
 */
export function isHomePath(path: unknown): path is string {
  return HomePath.safeParse(path).success
}

/**
 * The body of `PUT /v1/home/file` (seed 000: `handoff-owner-checkpoint.json` and others). Revision
 * 0 creates only; otherwise the write commits only at `expectedRevision`. Reconciliation: when the
 * file already holds exactly `content` at `expectedRevision + 1`, the write is answered as the
 * committed write it repeats, so retrying after a lost answer is safe.
 */
export const WriteHomeFileInput = z.strictObject({
  path: HomePath,
  /** 0 creates only; otherwise the revision the caller last read. */
  expectedRevision: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  content: z.string(),
})

/** A parsed home write. */
export type WriteHomeFileInput = z.infer<typeof WriteHomeFileInput>

/** The answer of a home write. */
export const HomeFileWriteView = z.object({
  path: z.string(),
  revision: z.number().int(),
  size: z.number().int(),
  updatedAt: z.iso.datetime(),
})
/** A committed write. */
export type HomeFileWriteView = z.infer<typeof HomeFileWriteView>

/** The answer of `GET /v1/home/file`. */
export const HomeFileView = HomeFileWriteView.extend({
  content: z.string(),
  ...handedTrace('the request that wrote this revision'),
})
/** A file with its content. */
export type HomeFileView = z.infer<typeof HomeFileView>

/** One entry of `GET /v1/home/files`: no content. */
export const HomeFileEntryView = z.object({
  path: z.string(),
  revision: z.number().int(),
  size: z.number().int(),
  updatedAt: z.iso.datetime(),
})
/** A listed file. */
export type HomeFileEntryView = z.infer<typeof HomeFileEntryView>

/** The answer of `GET /v1/home/files`, ordered by path; `nextAfter` is null on the last page. */
export const HomeFileListView = z.object({
  files: z.array(HomeFileEntryView),
  nextAfter: z.string().nullable(),
})
/** A page of home files. */
export type HomeFileListView = z.infer<typeof HomeFileListView>

/** The answer of `DELETE /v1/home/file`. */
export const HomeFileDeleteView = z.object({
  path: z.string(),
  /** The revision that was deleted. */
  revision: z.number().int(),
  deleted: z.literal(true),
})
/** A deleted file. */
export type HomeFileDeleteView = z.infer<typeof HomeFileDeleteView>

/** Files a listing page answers when it names no `limit`: the default, within the hub's most. */
export const defaultHomePageSize = (config: { maxPageSize: number }) =>
  Math.min(HOME_LIMITS.defaultPageSize, config.maxPageSize)

/** The query of a home listing under the hub's page size: the whole rule of its shape. */
export function listHomeFilesQuery(config: { maxPageSize: number }) {
  return z.strictObject({
    prefix: HomePathPrefix.optional().describe('Only paths starting with this text'),
    after: HomePath.optional().describe(
      'Exclusive path cursor: the nextAfter of the previous page',
    ),
    limit: wholeNumber({ min: 1, max: config.maxPageSize })
      .optional()
      .describe(
        `At most this many files, 1 to ${config.maxPageSize} (default ${defaultHomePageSize(config)})`,
      ),
  })
}
/** A parsed home listing query. */
export type ListHomeFilesQuery = z.output<ReturnType<typeof listHomeFilesQuery>>
