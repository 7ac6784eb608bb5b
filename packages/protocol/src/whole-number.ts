// The one rule for a whole number written as text, free of schemas so a client that only sends
// requests (and reads a Retry-After) loads no zod; the codecs publish the same rule.

/** The largest whole number a codec takes: 15 digits, inside Number.MAX_SAFE_INTEGER. */
export const MAX_WHOLE_NUMBER = 999_999_999_999_999

const WHOLE_TEXT = /^(?:0|[1-9][0-9]{0,14})$/

/**
 * The whole number a decimal text names, from `min` to `max` (0 to {@link MAX_WHOLE_NUMBER} by
 * default): digits only, no sign, no leading zeros, at most 15 of them. Any other text answers
 * undefined. The one rule for a whole number written as text, in every face: the one
 * {@link wholeNumber} publishes and a hub's settings, the CLI's flags and headers follow.
 *
 * @example parseWholeNumber('25') // 25
 * @example parseWholeNumber('1e3') // undefined
 */
export function parseWholeNumber(
  text: string | null | undefined,
  range: { min?: number; max?: number } = {},
): number | undefined {
  if (typeof text !== 'string' || !WHOLE_TEXT.test(text)) return undefined
  const n = Number(text)
  return n >= (range.min ?? 0) && n <= (range.max ?? MAX_WHOLE_NUMBER) ? n : undefined
}
