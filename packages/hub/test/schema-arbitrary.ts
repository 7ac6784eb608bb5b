// Inputs made from a published JSON Schema (the subset the hub's OpenAPI document uses), valid by
// it, and single changes that make one invalid: what a client generated from the document sends.
import fc from 'fast-check'

/** A JSON Schema as the OpenAPI document holds it. */
export interface JsonSchema {
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  propertyNames?: JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  uniqueItems?: boolean
  not?: JsonSchema
}

// Text a generated string is made of: printable ASCII, as a client's own values mostly are.
const text = (min: number, max: number) => fc.string({ minLength: min, maxLength: max })

const cap = (n: number | undefined, fallback: number) => Math.min(n ?? fallback, fallback)

/** A value valid by `schema`; `{}` (any JSON) gives small JSON values. */
export function valid(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.not) {
    const { not, ...rest } = schema
    // The `not`s the document uses: of a type (`{"type": "null"}`), or of members present together
    // (`{"required": ["input", "inputResourceId"]}`).
    return valid(rest, depth).filter((v) => {
      if (not.type === 'null') return v !== null
      if (not.required && v !== null && typeof v === 'object') {
        return !not.required.every((k) => Object.hasOwn(v, k))
      }
      return true
    })
  }
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  const branches = schema.anyOf ?? schema.oneOf
  if (branches) return fc.oneof(...branches.map((b) => valid(b, depth)))
  if (schema.allOf?.length === 1) return valid(schema.allOf[0]!, depth)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string':
      return validString(schema)
    case 'integer': {
      const min = schema.minimum ?? (schema.exclusiveMinimum ?? -1_000_001) + 1
      const max = schema.maximum ?? (schema.exclusiveMaximum ?? 1_000_001) - 1
      return fc.oneof(
        fc.integer({ min: Math.max(min, -1_000_000), max: Math.min(max, 1_000_000) }),
        fc.constantFrom(min, max),
      )
    }
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const min = schema.minItems ?? 0
      const max = Math.max(min, cap(schema.maxItems, min + 3))
      const items = schema.items ? valid(schema.items, depth + 1) : fc.jsonValue({ maxDepth: 1 })
      return schema.uniqueItems
        ? fc.uniqueArray(items, {
            minLength: min,
            maxLength: max,
            selector: (v) => JSON.stringify(v),
          })
        : fc.array(items, { minLength: min, maxLength: max })
    }
    case 'object':
      return validObject(schema, depth)
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

function validString(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0
  const max = Math.max(min, cap(schema.maxLength, min + 24))
  if (schema.format === 'date-time') {
    return fc
      .date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2100-01-01T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString())
  }
  if (schema.pattern) {
    // JSON Schema patterns are ECMA-262 with Unicode semantics (\p{…} escapes and all).
    const re = unicodePattern(schema.pattern)
    // The pattern bounds the length itself when maxLength does not.
    const longest = schema.maxLength ?? Number.POSITIVE_INFINITY
    const fits = (s: string) => s.length >= min && s.length <= longest
    try {
      return fc.stringMatching(re).filter(fits)
    } catch {
      // A pattern the generator cannot read (a lookahead): texts of the right alphabet, kept
      // when they match.
      return fc
        .string({ unit: fc.constantFrom(...'abcxyz019_-./'), minLength: min, maxLength: max + 40 })
        .filter((s) => re.test(s))
    }
  }
  return text(min, max)
}

function validObject(schema: JsonSchema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = schema.properties ?? {}
  const required = new Set(schema.required ?? [])
  const shape: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, s] of Object.entries(props)) shape[name] = valid(s, depth + 1)
  if (Object.keys(props).length > 0) {
    return fc.record(shape, { requiredKeys: [...required].filter((k) => k in props) })
  }
  if (depth > 2) return fc.constant({})
  const values =
    typeof schema.additionalProperties === 'object'
      ? valid(schema.additionalProperties, depth + 1)
      : fc.jsonValue({ maxDepth: 1 })
  const key = schema.propertyNames ? validString(schema.propertyNames) : text(1, 8)
  return fc.dictionary(key, values, { maxKeys: 3 })
}

/** A value of another JSON type than any `schema` allows, when there is one. */
export function wrongType(schema: JsonSchema): unknown | undefined {
  const types = typesOf(schema)
  if (!types) return undefined
  for (const [type, value] of [
    ['object', { zz: 1 }],
    ['array', [1]],
    ['boolean', true],
    ['string', 'zz'],
  ] as const) {
    if (!types.has(type)) return value
  }
  return undefined
}

/** The JSON types a schema allows, or undefined when it allows any. */
function typesOf(schema: JsonSchema): Set<string> | undefined {
  const branches = schema.anyOf ?? schema.oneOf
  if (branches) {
    const all = new Set<string>()
    for (const b of branches) {
      const t = typesOf(b)
      if (!t) return undefined
      for (const x of t) all.add(x)
    }
    return all
  }
  if (schema.enum) return new Set(schema.enum.map((v) => (Array.isArray(v) ? 'array' : typeof v)))
  if (schema.const !== undefined) return new Set([typeof schema.const])
  if (!schema.type) return undefined
  const list = Array.isArray(schema.type) ? schema.type : [schema.type]
  const out = new Set(list.map((t) => (t === 'integer' ? 'number' : t)))
  if (list.includes('integer')) out.add('number')
  return out
}

/** A text the parameter schema refuses, when one is easy to make: the wrong kind, or too long. */
export function invalidText(schema: JsonSchema): string | undefined {
  const branches = schema.anyOf ?? schema.oneOf ?? [schema]
  const take = (s: string) => {
    for (const b of branches) {
      if (matchesText(b, s) !== false) return undefined
    }
    return s
  }
  return take('zz-not-valid') ?? take(`${'z'.repeat(schema.maxLength ?? 10_000)}z`)
}

// Whether a text parameter matches one schema: false when surely not, undefined when unsure.
function matchesText(schema: JsonSchema, s: string): boolean | undefined {
  if (schema.enum) return schema.enum.includes(s)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  if (type === 'integer' || type === 'number' || type === 'boolean') return false
  if (type !== 'string') return undefined
  if (schema.maxLength !== undefined && s.length > schema.maxLength) return false
  if (schema.pattern && !unicodePattern(schema.pattern).test(s)) return false
  return schema.format || schema.pattern || schema.maxLength !== undefined ? true : undefined
}

function unicodePattern(pattern: string): RegExp {
  try {
    return new RegExp(pattern, 'u')
  } catch {
    return new RegExp(pattern)
  }
}
