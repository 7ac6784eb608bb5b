import { z } from 'zod'

/** A JSON value: what JSON.parse answers. */
export type JsonValue = z.core.util.JSONType

/**
 * A schema for any JSON value, present: it checks only that the value is there and does not
 * walk it. A hub's body arrives from JSON.parse after one bounded walk of its text (depth,
 * element count, keys, text), so it is plain JSON already; `z.json()` would walk it again, at a
 * cost set by its shape. A caller that builds values itself validates them as JSON before it
 * sends them (JSON.stringify does).
 *
 * @example z.object({ data: jsonValue() })
 */
export function jsonValue(): z.ZodType<JsonValue> {
  return z
    .unknown()
    .refine((v) => v !== undefined, { message: 'Required', abort: true }) as z.ZodType<JsonValue>
}

/**
 * A schema for any JSON value but null, present; published as `{"not": {"type": "null"}}` so the
 * rule is in the document, not only in the hub.
 *
 * @example z.object({ payload: nonNullJson() })
 */
export function nonNullJson(): z.ZodType<JsonValue> {
  return z
    .unknown()
    .refine((v) => v !== undefined, { message: 'Required', abort: true })
    .refine((v) => v !== null, 'must not be null')
    .meta({ not: { type: 'null' } }) as z.ZodType<JsonValue>
}
