import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BatonError, CreateHandoffInput, ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import { parseInput } from '../validation.js'
import {
  isDepthRefusal,
  isStorableText,
  MAX_JSON_DEPTH,
  parseJsonBody,
  refusedEnvelope,
} from './json-guard.js'

/** The guard's verdict on a JSON text: its value, or the code and field it refuses with. */
function verdict(text: string, maxElements: number): unknown {
  try {
    return { value: parseJsonBody(Buffer.from(text), { maxElements }) }
  } catch (error) {
    if (!(error instanceof BatonError)) throw error
    return { code: error.code, field: error.context.field }
  }
}

/**
 * The slow, obvious guard: parse, then walk the value in text order, counting every array item
 * and object member, with the path kept as it goes.
 */
function reference(text: string, maxElements: number): unknown {
  const value: unknown = JSON.parse(text)
  let elements = 0
  const at = (path: string[]) => (path.length === 0 ? 'body' : path.join('.'))
  const refuse = (code: string, path: string[]) => ({ code, field: at(path) })
  const walk = (v: unknown, depth: number, path: string[]): object | undefined => {
    if (typeof v === 'string') return isStorableText(v) ? undefined : refuse('invalid_text', path)
    if (v === null || typeof v !== 'object') return undefined
    if (depth > MAX_JSON_DEPTH) return refuse('invalid_request', path.slice(0, MAX_JSON_DEPTH))
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v)
    for (const [key, item] of entries) {
      if (++elements > maxElements) return { code: 'body_too_many_elements', field: 'body' }
      const inner = [...path, key]
      if (!Array.isArray(v)) {
        if (key === '__proto__') return refuse('json_key_forbidden', inner)
        if (!isStorableText(key)) return refuse('invalid_text', inner)
      }
      const problem = walk(item, depth + 1, inner)
      if (problem) return problem
    }
    return undefined
  }
  return walk(value, 1, []) ?? { value }
}

// JSON texts with what the guard looks for: `__proto__` keys (written plainly or escaped),
// U+0000, lone and paired surrogates as escapes, and nesting near the limit.
// No index-like keys: a JavaScript object lists those first, the text in the order written.
const key = fc.oneof(
  fc.string({ maxLength: 4 }).filter((k) => !/^(?:0|[1-9][0-9]*)$/.test(k)),
  fc.constantFrom('__proto__', 'a\u0000', '\ud800', '\udc00x', '\ud83d\ude00'),
)
const leaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 6, unit: 'binary' }),
  fc.constantFrom('\u0000', '\ud800', 'x\udc00', '\ud83d\ude00', 'é\\"'),
)
/** An object's members in order, duplicates and `__proto__` included, as the text has them. */
class Members {
  constructor(readonly list: [string, unknown][]) {}
}
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  // Unique keys: JSON.parse keeps only the last of duplicates, the text (and the guard) sees all.
  object: fc
    .uniqueArray(fc.tuple(key, tie('value')), { maxLength: 5, selector: ([k]) => k })
    .map((m) => new Members(m)),
})).value
/** Writes a value as JSON text, `__proto__` as an own key, some keys with every char escaped. */
function write(v: unknown, escapeKeys: boolean): string {
  if (v instanceof Members) {
    const members = v.list.map(([k, x]) => {
      const name = escapeKeys
        ? `"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
        : JSON.stringify(k)
      return `${name}:${write(x, escapeKeys)}`
    })
    return `{${members.join(',')}}`
  }
  if (Array.isArray(v)) return `[${v.map((x) => write(x, escapeKeys)).join(', ')}]`
  return JSON.stringify(v)
}

test('the guard refuses and accepts exactly what the obvious walk does, with the same field', () => {
  fc.assert(
    fc.property(json, fc.boolean(), fc.integer({ min: 0, max: 30 }), (v, escapeKeys, max) => {
      const text = write(v, escapeKeys)
      assert.deepEqual(verdict(text, max), reference(text, max))
    }),
    { numRuns: 2000 },
  )
})

test('deep nesting: the limit itself is accepted, one more level is refused with its path', () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
  assert.ok('value' in (verdict(nested(MAX_JSON_DEPTH), 1000) as object))
  assert.deepEqual(verdict(nested(MAX_JSON_DEPTH + 1), 1000), {
    code: 'invalid_request',
    field: Array(MAX_JSON_DEPTH).fill('0').join('.'),
  })
  const keyed = `${'{"a":'.repeat(MAX_JSON_DEPTH)}[]${'}'.repeat(MAX_JSON_DEPTH)}`
  assert.deepEqual(verdict(keyed, 1000), {
    code: 'invalid_request',
    field: Array(MAX_JSON_DEPTH).fill('a').join('.'),
  })
  // Unclosed nesting far past the limit is refused without being parsed.
  assert.equal(
    (verdict('['.repeat(1_000_000), 10_000_000) as { code: string }).code,
    'invalid_request',
  )
})

test('the element bound accepts a body at it and refuses one over it, before any schema', () => {
  const items = (n: number) => `[${Array(n).fill('{}').join(',')}]`
  assert.equal((verdict(items(100), 100) as { value: unknown[] }).value.length, 100)
  assert.deepEqual(verdict(items(101), 100), { code: 'body_too_many_elements', field: 'body' })
  const wide = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`
  assert.ok('value' in (verdict(wide(100), 100) as object))
  assert.deepEqual(verdict(wide(101), 100), { code: 'body_too_many_elements', field: 'body' })
  // A body the handoff schema would refuse still answers the bound's code: it is never parsed.
  assert.deepEqual(verdict(`{"payload":${items(200)},"unknown":1}`, 100), {
    code: 'body_too_many_elements',
    field: 'body',
  })
  assert.equal(ERRORS.body_too_many_elements.status, 413)
})

test('long strings and many escapes at the size limit are accepted; the text rule still holds', () => {
  const long = `{"payload":"${'a'.repeat(1024 * 1024)}"}`
  assert.ok('value' in (verdict(long, 10) as object))
  const escapes = `{"payload":"${'\\u00e9'.repeat(100_000)}\\ud83d\\ude00"}`
  const accepted = verdict(escapes, 10) as { value: { payload: string } }
  assert.equal(accepted.value.payload.length, 100_002)
  assert.deepEqual(verdict(`{"payload":{"a":["x","${'\\u00e9'.repeat(1000)}\\ud800"]}}`, 10), {
    code: 'invalid_text',
    field: 'payload.a.1',
  })
  assert.deepEqual(verdict('{"payload":{"\\u005f_proto__":1}}', 10), {
    code: 'json_key_forbidden',
    field: 'payload.__proto__',
  })
})

test('a free-form JSON value passes the schema without a walk, and the schema still names fields', () => {
  const body = parseJsonBody(Buffer.from(`{"payload":[${Array(5000).fill('[{}]').join(',')}]}`))
  assert.equal((parseInput(CreateHandoffInput, body).payload as unknown[]).length, 5000)
  assert.throws(
    () => parseInput(CreateHandoffInput, { payload: null }),
    (e: BatonError) => e.code === 'invalid_request' && e.context.field === 'payload',
  )
  assert.throws(
    () => parseInput(CreateHandoffInput, {}),
    (e: BatonError) => e.code === 'invalid_request' && e.context.field === 'payload',
  )
  assert.throws(
    () => parseInput(CreateHandoffInput, { payload: {}, note: 5 }),
    (e: BatonError) => e.code === 'invalid_request' && e.context.field === 'note',
  )
})

test('a body refused for its depth keeps its outer levels readable, its deep values cut to null', () => {
  const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)
  const text = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x]}\\"{[","arguments":{"program":${deep},"note":"}]"}}}`
  let refused: unknown
  assert.throws(
    () => parseJsonBody(Buffer.from(text)),
    (e: BatonError) => {
      refused = e
      return isDepthRefusal(e) && e.context.field === `params.arguments.program${'.0'.repeat(125)}`
    },
  )
  assert.deepEqual(refusedEnvelope(refused, 2), {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'x]}"{[', arguments: null },
  })
  assert.deepEqual((refusedEnvelope(refused, 3) as { params: unknown }).params, {
    name: 'x]}"{[',
    arguments: { program: null, note: '}]' },
  })
  // Other refusals, and other errors, keep no text.
  for (const other of ['{"__proto__":1}', '[1,2,3]'.repeat(2)]) {
    assert.throws(
      () => parseJsonBody(Buffer.from(other), { maxElements: 1 }),
      (e: BatonError) => {
        assert.equal(isDepthRefusal(e), false)
        assert.equal(refusedEnvelope(e, 2), undefined)
        return true
      },
    )
  }
  assert.equal(refusedEnvelope(new Error('x'), 2), undefined)
})
