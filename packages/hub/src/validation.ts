import { BatonError, type Refusal, refusalOf } from '@baton/protocol'
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
  const { issue, path, refusal } = locate(schema, result.error.issues[0]!)
  const base = path.map(String).join('.')
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? ''
    const field = base ? `${base}.${key}` : key
    // A value whose every refusal has its own code (`within`) answers it for an unknown key too.
    const code = refusal?.within ? refusal.code : 'unknown_field'
    throw new BatonError(code, `Unknown field ${JSON.stringify(field)} in ${what}`, { field })
  }
  const field = base || what
  if (value === undefined || value === null || typeof value !== 'object') {
    if (!base) {
      throw new BatonError('invalid_request', `The ${what} must be a JSON object`, { field })
    }
  }
  throw new BatonError(refusal?.code ?? 'invalid_request', `Invalid ${field}: ${issue.message}`, {
    field,
    ...(refusal?.fix === undefined ? {} : { fix: refusal.fix }),
  })
}

const unwrap = (node: z.ZodType): z.ZodType =>
  node instanceof z.ZodOptional || node instanceof z.ZodDefault
    ? unwrap(node.unwrap() as z.ZodType)
    : node

/**
 * The problem to answer, at its full path, with the code and fix registered (`withCode`) on the
 * refused field's schema or on the innermost object holding it that has one (looked for through
 * objects, optional and default wrappers, and only when the walk reaches the refused field itself:
 * an item of a list keeps `invalid_request`, unless a schema holding it covers all `within` it).
 * A refusal by a union of shapes answers the problem
 * of the shape the input came nearest to: the one with fewest problems, the first on a tie.
 */
function locate(
  schema: z.ZodType | undefined,
  issue: z.core.$ZodIssue,
  outer: PropertyKey[] = [],
  inherited?: Refusal,
): { issue: z.core.$ZodIssue; path: PropertyKey[]; refusal?: Refusal | undefined } {
  let refusal = inherited
  // The innermost refusal that covers everything inside its value (`within`).
  let covering = inherited?.within ? inherited : undefined
  let node = schema
  const visit = (n: z.ZodType) => {
    for (let m: z.ZodType = n; ; m = m.unwrap() as z.ZodType) {
      const own = refusalOf(m)
      if (own?.within) covering = own
      refusal = own ?? refusal
      if (!(m instanceof z.ZodOptional || m instanceof z.ZodDefault)) break
    }
  }
  if (node) visit(node)
  for (const key of issue.path) {
    const at: z.ZodType | undefined = node ? unwrap(node) : undefined
    node =
      at instanceof z.ZodObject
        ? (at.shape as Record<PropertyKey, z.ZodType | undefined>)[key]
        : undefined
    if (!node) break
    visit(node)
  }
  const path = [...outer, ...issue.path]
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    let nearest = 0
    issue.errors.forEach((e, i) => {
      if (e.length < issue.errors[nearest]!.length) nearest = i
    })
    const union = node ? unwrap(node) : undefined
    const branch = union instanceof z.ZodUnion ? (union.options[nearest] as z.ZodType) : undefined
    return locate(branch, issue.errors[nearest]![0]!, path, node ? refusal : covering)
  }
  return { issue, path, refusal: node ? refusal : covering }
}
