import { z } from 'zod'
import type { ErrorCode } from './errors.js'
import { MAX_WHOLE_NUMBER } from './whole-number.js'

/**
 * Codecs for the parts of a contract's input that arrive as text (path and query parameters) or
 * as JSON, each answering the type a service wants. Each is published exactly: what its JSON
 * Schema accepts, it accepts, and nothing else, so a client generated from the OpenAPI document
 * (or a model reading an MCP tool's schema) meets no hidden rule.
 */

export { MAX_WHOLE_NUMBER, parseWholeNumber } from './whole-number.js'

/**
 * A regular expression source matching exactly the decimal texts (no sign, no leading zeros) of
 * the whole numbers from `min` to `max`, so a text parameter's range is in its published schema.
 * Built digit by digit, as a range of numbers with one length is a few ranges of digits.
 */
export function wholeRangePattern(min: number, max: number): string {
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || min > max) {
    throw new RangeError(`no whole numbers from ${min} to ${max}`)
  }
  const alternatives: string[] = []
  for (let length = String(min).length; length <= String(max).length; length++) {
    const low = Math.max(min, length === 1 ? 0 : 10 ** (length - 1))
    const high = Math.min(max, 10 ** length - 1)
    if (low <= high) alternatives.push(...sameLength(String(low), String(high)))
  }
  return `^(?:${alternatives.join('|')})$`
}

// Patterns for the texts from `low` to `high`, both of the same length.
function sameLength(low: string, high: string): string[] {
  if (low === high) return [low]
  if (low.length === 1) return [digitClass(low, high)]
  // A shared first digit: the rest, after it.
  if (low[0] === high[0]) return sameLength(low.slice(1), high.slice(1)).map((p) => low[0] + p)
  const rest = low.length - 1
  const nines = '9'.repeat(rest)
  const zeros = '0'.repeat(rest)
  const out: string[] = []
  // From low up to the end of its first digit, the whole first digits between, then from the
  // start of high's first digit up to high.
  const lowAll = low.slice(1) === zeros
  const highAll = high.slice(1) === nines
  const first = lowAll ? Number(low[0]) : Number(low[0]) + 1
  const last = highAll ? Number(high[0]) : Number(high[0]) - 1
  if (!lowAll) out.push(...sameLength(low.slice(1), nines).map((p) => low[0] + p))
  if (first <= last) out.push(`${digitClass(String(first), String(last))}[0-9]{${rest}}`)
  if (!highAll) out.push(...sameLength(zeros, high.slice(1)).map((p) => high[0] + p))
  return out
}

const digitClass = (a: string, b: string) => (a === b ? a : `[${a}-${b}]`)

/**
 * A whole number from `min` to `max`: a JSON integer in a body or a tool's arguments, or its
 * decimal text (no sign, no leading zeros) in a path or query parameter. Answers a number.
 *
 * @example z.object({ limit: wholeNumber({ min: 1, max: 500 }).optional() })
 */
export function wholeNumber(
  range: { min?: number; max?: number } = {},
): z.ZodType<number, number | string> {
  const min = range.min ?? 0
  const max = range.max ?? MAX_WHOLE_NUMBER
  const pattern = new RegExp(wholeRangePattern(min, max))
  return z.union([
    z.number().int().min(min).max(max),
    z
      .string()
      .regex(pattern, `a whole number from ${min} to ${max}`)
      .transform((s) => Number(s)),
  ])
}

/**
 * The `Idempotency-Key` header of an operation that takes one: 8 to 255 printable ASCII
 * characters without spaces. The same key and request answer the first result.
 */
export const IdempotencyKeyHeader = z
  .string()
  .regex(/^[\x21-\x7e]{8,255}$/, '8 to 255 printable ASCII characters without spaces')
  .describe(
    'Makes the call safe to repeat: the same key and request answer the first result. Signed requests must cover it.',
  )

/** A hub's longest long poll by default, in seconds (seed 002: 25); an operator may change it. */
export const DEFAULT_MAX_WAIT_SECONDS = 25

/**
 * Seconds to hold a long poll: any whole number, answered clamped to `max(config)` by the
 * operation (seed 002: a longer wait is clamped, never refused). Answers a number.
 */
export function waitSeconds(): z.ZodType<number, number | string> {
  return wholeNumber()
}

/** A yes/no query flag: `true` or `false` as text (or a JSON boolean). Answers a boolean. */
export function booleanFlag(): z.ZodType<boolean, boolean | string> {
  return z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')])
}

/**
 * An instant as an RFC 3339 date-time with an offset (`2026-12-04T19:00:00Z`). Answers epoch
 * milliseconds.
 */
export function isoInstant(): z.ZodType<number, string> {
  return z.iso.datetime({ offset: true }).transform((s) => Date.parse(s))
}

/** How a refusal by a schema is answered: its code, and what to do when the registry's is vaguer. */
export interface Refusal {
  code: ErrorCode
  fix?: string
  /** Whether a refusal anywhere inside the value (an item of a list included) answers it too. */
  within?: boolean
}

// Keyed by a schema's definition, which `.describe()` and `.meta()` keep while making a new schema.
const refusals = new WeakMap<object, Refusal>()

/**
 * The schema, registered so that a value it refuses answers `code` instead of `invalid_request`
 * (and `fix`, when given, instead of the registry's): a rule with a documented code of its own (a
 * home path's `invalid_path`) stays in the published schema and keeps its code.
 *
 * @example withCode(z.string().regex(/^[a-z]+$/), 'invalid_path')
 */
export function withCode<S extends z.ZodType>(
  schema: S,
  code: ErrorCode,
  fix?: string,
  options: { within?: boolean } = {},
): S {
  refusals.set(schema._zod.def, {
    code,
    ...(fix === undefined ? {} : { fix }),
    ...(options.within ? { within: true } : {}),
  })
  return schema
}

/** The code {@link withCode} registered for a schema, if any. */
export function codeOf(schema: z.ZodType): ErrorCode | undefined {
  return refusals.get(schema._zod.def)?.code
}

/** The code and fix {@link withCode} registered for a schema, if any. */
export function refusalOf(schema: z.ZodType): Refusal | undefined {
  return refusals.get(schema._zod.def)
}
