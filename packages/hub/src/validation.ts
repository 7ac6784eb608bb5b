import { BatonError, codeOf, type ErrorCode } from '@baton/protocol'
import { z } from 'zod'

/**
 * Parses a value with a wire schema, turning the first problem into a 400 with a stable code:
 * `unknown_field` for a field the schema does not know, `invalid_request` for anything else,
 * with the offending field's path in `field`.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what = 'body',
): z.output<S> {
  let result: z.ZodSafeParseResult<z.output<S>>
  try {
    result = schema.safeParse(value) as z.ZodSafeParseResult<z.output<S>>
  } catch (error) {
    // Validating JSON nested thousands of levels deep overflows the stack: a bad request.
    if (error instanceof RangeError) {
      throw new BatonError('invalid_request', `The ${what} is nested too deeply`, { field: what })
    }
    throw error
  }
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const base = issue.path.map(String).join('.')
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? ''
    const field = base ? `${base}.${key}` : key
    throw new BatonError('unknown_field', `Unknown field ${JSON.stringify(field)} in ${what}`, {
      field,
    })
  }
  const field = base || what
  if (value === undefined || value === null || typeof value !== 'object') {
    if (!base) {
      throw new BatonError('invalid_request', `The ${what} must be a JSON object`, { field })
    }
  }
  const code = codeAt(schema, issue.path) ?? 'invalid_request'
  throw new BatonError(code, `Invalid ${field}: ${issue.message}`, { field })
}

/**
 * The code registered (`withCode`) on the refused field's schema, or on the innermost object
 * holding it that has one: looked for through objects, optional and default wrappers, and only
 * when the walk reaches the refused field itself (an item of a list keeps `invalid_request`).
 */
function codeAt(schema: z.ZodType, path: readonly PropertyKey[]): ErrorCode | undefined {
  let code: ErrorCode | undefined
  let node: z.ZodType | undefined = schema
  let depth = 0
  while (node) {
    code = codeOf(node) ?? code
    if (node instanceof z.ZodOptional || node instanceof z.ZodDefault) {
      node = node.unwrap() as z.ZodType
    } else if (node instanceof z.ZodObject && depth < path.length) {
      node = (node.shape as Record<PropertyKey, z.ZodType | undefined>)[path[depth++]!]
    } else break
  }
  return depth === path.length ? code : undefined
}
