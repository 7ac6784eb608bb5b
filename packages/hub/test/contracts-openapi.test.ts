// The contract is the rule, checked from outside: for every operation in the hub's own
// /openapi.json, inputs made from its published schemas are never refused as invalid (no rule the
// document does not state), and an input one published rule refuses is answered 400 with a
// stable code. The client sends what a client generated from the document would.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import { invalidText, type JsonSchema, valid, wrongType } from './schema-arbitrary.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN = 'contracts-operator-token-0123456789abcdef'
// Long polls answer at once, so a generated wait costs nothing.
const ENV = {
  BATON_ADMISSION: 'open',
  BATON_ADMIN_TOKEN: ADMIN,
  BATON_HANDOFF_MAX_WAIT_SECONDS: '0',
  BATON_MESSAGE_MAX_WAIT_SECONDS: '0',
  BATON_TRANSFER_MAX_WAIT_SECONDS: '0',
  BATON_COMPUTE_MAX_WAIT_SECONDS: '0',
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
  BATON_HANDOFF_DAILY_QUOTA: '1000000',
  BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
}
/** Generated inputs per operation; BATON_CONTRACT_RUNS searches deeper. */
const RUNS = Number(process.env.BATON_CONTRACT_RUNS) || 8
/** Codes that mean "your input breaks the contract". */
const INVALID = new Set(['invalid_request', 'unknown_field', 'invalid_json'])
/** Routes that are a transport or a text answer, not a JSON operation. */
const NOT_OPERATIONS = new Set(['/mcp', '/metrics', '/openapi.json'])

interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required?: boolean
  schema: JsonSchema
}
interface OperationDoc {
  operationId: string
  security?: Record<string, unknown>[]
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content?: { 'application/json'?: { schema: JsonSchema } } }
}
interface Case {
  method: string
  path: string
  doc: OperationDoc
}

interface Input {
  params: Record<string, string>
  query: Record<string, string>
  body: unknown
}

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))

// A path parameter's value that names another route, not a value of this one: empty, or a dot
// segment that URL resolution removes.
const routable = (s: string) => s !== '' && s !== '.' && s !== '..'

function inputOf(c: Case): fc.Arbitrary<Input> {
  const params: Record<string, fc.Arbitrary<string>> = {}
  const query: Record<string, fc.Arbitrary<string>> = {}
  const optional: string[] = []
  for (const p of c.doc.parameters ?? []) {
    if (p.in === 'header') continue
    const value = valid(p.schema).map(asText)
    if (p.in === 'path') params[p.name] = value.filter(routable)
    else {
      query[p.name] = value
      if (!p.required) optional.push(p.name)
    }
  }
  const bodySchema = c.doc.requestBody?.content?.['application/json']?.schema
  return fc.record({
    params: fc.record(params),
    query: fc.record(query, {
      requiredKeys: Object.keys(query).filter((k) => !optional.includes(k)),
    }),
    body: bodySchema ? valid(bodySchema) : fc.constant(undefined),
  }) as fc.Arbitrary<Input>
}

/** Single changes of a valid input that one published rule refuses, with what they change. */
function breakings(c: Case, input: Input): { what: string; input: Input }[] {
  const out: { what: string; input: Input }[] = []
  for (const p of c.doc.parameters ?? []) {
    if (p.in !== 'query') continue
    const bad = invalidText(p.schema)
    if (bad !== undefined && bad.length < 5000) {
      out.push({
        what: `query ${p.name}=${bad.slice(0, 20)}`,
        input: { ...input, query: { ...input.query, [p.name]: bad } },
      })
    }
  }
  const body = c.doc.requestBody?.content?.['application/json']?.schema
  const record = input.body
  if (body?.type === 'object' && record && typeof record === 'object' && !Array.isArray(record)) {
    const fields = record as Record<string, unknown>
    if (body.additionalProperties === false) {
      out.push({
        what: 'an unknown body field',
        input: { ...input, body: { ...fields, zz_unknown: 1 } },
      })
    }
    for (const name of body.required ?? []) {
      const { [name]: _gone, ...rest } = fields
      out.push({ what: `body without ${name}`, input: { ...input, body: rest } })
    }
    for (const [name, schema] of Object.entries(body.properties ?? {})) {
      const bad = wrongType(schema)
      if (bad !== undefined) {
        out.push({
          what: `body ${name} of another type`,
          input: { ...input, body: { ...fields, [name]: bad } },
        })
      }
      if (schema.type === 'string' && schema.maxLength !== undefined && schema.maxLength < 5000) {
        const long = 'z'.repeat(schema.maxLength + 1)
        out.push({
          what: `body ${name} too long`,
          input: { ...input, body: { ...fields, [name]: long } },
        })
      }
    }
  }
  return out
}

/** The first finding of each operation, so one operation's many do not hide the others'. */
function firstOfEach(findings: string[]): string[] {
  const seen = new Map<string, string>()
  for (const f of findings) {
    const key = f.split(' ').slice(0, 2).join(' ')
    if (!seen.has(key))
      seen.set(key, f.slice(0, 600) + (f.length > 600 ? ` … ${f.slice(-300)}` : ''))
  }
  return [...seen.values()]
}

for (const store of testStores) {
  describe(`every operation's published contract is the hub's rule (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    let handoffToken: string
    let cases: Case[]
    before(async () => {
      hub = await startTestHub(store, ENV)
      agent = await signedAgent(hub)
      const created = await call(hub, 'POST', '/services/v1/handoff', { body: { payload: 1 } })
      handoffToken = created.body.owner_token as string
      const doc = (await call(hub, 'GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, OperationDoc>>
      }
      cases = Object.entries(doc.paths).flatMap(([path, methods]) =>
        NOT_OPERATIONS.has(path)
          ? []
          : Object.entries(methods).map(([method, d]) => ({
              method: method.toUpperCase(),
              path,
              doc: d,
            })),
      )
    })
    after(() => hub.close())

    async function send(
      c: Case,
      input: Input,
    ): Promise<{ status: number; body: { code?: string } }> {
      const path =
        c.path.replace(/\{([A-Za-z_]+)\}/g, (_, n: string) =>
          encodeURIComponent(input.params[n] ?? ''),
        ) + (Object.keys(input.query).length > 0 ? `?${new URLSearchParams(input.query)}` : '')
      const kind = Object.keys(c.doc.security?.[0] ?? {})[0]
      const body = c.method === 'GET' || c.method === 'DELETE' ? undefined : (input.body ?? {})
      if (kind === 'httpSignature') {
        const res = await agent.request<{ code?: string }>(
          c.method,
          path,
          body as object | undefined,
        )
        return { status: res.status, body: res.body }
      }
      const token =
        kind === 'handoffToken' ? handoffToken : kind === 'operatorToken' ? ADMIN : undefined
      const res = await call(hub, c.method, path, {
        ...(body === undefined ? {} : { body }),
        ...(token ? { token } : {}),
      })
      return { status: res.status, body: res.body }
    }

    test('an input valid by the published schemas is never refused as invalid', async () => {
      const refused: string[] = []
      for (const c of cases) {
        if (process.env.BATON_TEST_TRACE_CASES) process.stderr.write(`${c.method} ${c.path}\n`)
        await fc.assert(
          fc.asyncProperty(inputOf(c), async (input) => {
            const res = await send(c, input)
            assert.ok(
              res.status < 500,
              `${c.method} ${c.path}: ${res.status} ${JSON.stringify(res.body)}`,
            )
            if (res.status === 400 && INVALID.has(String(res.body.code))) {
              refused.push(
                `${c.method} ${c.path} ${JSON.stringify(input)} -> ${JSON.stringify(res.body)}`,
              )
            }
          }),
          { numRuns: RUNS },
        )
      }
      assert.deepEqual(firstOfEach(refused), [], `${refused.length} valid inputs refused`)
    })

    test('an input a published rule refuses is answered 400 with a stable code', async () => {
      const accepted: string[] = []
      for (const c of cases) {
        const [sample] = fc.sample(inputOf(c), { numRuns: 1, seed: 7 })
        for (const broken of breakings(c, sample!)) {
          const res = await send(c, broken.input)
          const code = String(res.body.code)
          if (res.status !== 400 || !Object.hasOwn(ERRORS, code)) {
            accepted.push(
              `${c.method} ${c.path} with ${broken.what} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
            )
          }
        }
      }
      assert.deepEqual(
        accepted.slice(0, 10),
        [],
        `${accepted.length} broken inputs not refused 400`,
      )
    })
  })
}
