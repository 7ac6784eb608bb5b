import { ERRORS, type ErrorCode, IdempotencyKeyHeader } from '@baton/protocol'
import { z } from 'zod'
import type { Config } from '../config.js'
import { operationErrors } from './auth.js'
import { AUTH_KINDS } from './auth-kinds.js'
import { inputSchemas, type Operation } from './operation.js'

/** A route that is not an operation (a transport or a text answer) but is still documented. */
export interface ExtraPath {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  operationId: string
  summary: string
  tags: string[]
  responses: Record<string, { description: string; content?: Record<string, object> }>
}

/**
 * A JSON Schema for a zod schema, self-contained: recursive parts (such as arbitrary JSON) are
 * rendered as `{}` so that no `$ref` points outside the schema inside the OpenAPI document.
 */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const {
    $schema: _schema,
    $defs: _defs,
    ...rest
  } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  return dropLocalRefs(rest) as Record<string, unknown>
}

function dropLocalRefs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropLocalRefs)
  if (!v || typeof v !== 'object') return v
  const o = v as Record<string, unknown>
  if (typeof o.$ref === 'string' && o.$ref.startsWith('#/$defs/')) return {}
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, dropLocalRefs(x)]))
}

const errorSchema = {
  type: 'object',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string', description: 'What went wrong, for people' },
    code: { type: 'string', enum: Object.keys(ERRORS), description: 'Stable machine code' },
    fix: { type: 'string', description: 'What to do about it' },
  },
  additionalProperties: true,
}

const retryAfter = {
  description: 'Seconds to wait before retrying',
  schema: { type: 'integer', minimum: 0 },
}

/** The headers of an answer a client may keep for a while and then revalidate. */
function cacheHeaders(maxAgeSeconds: number): Record<string, object> {
  return {
    'Cache-Control': {
      description: `private, max-age=${maxAgeSeconds}: kept by the client this long, then revalidated`,
      schema: { type: 'string' },
    },
    ETag: {
      description: "The answer's entity tag, for If-None-Match",
      schema: { type: 'string' },
    },
  }
}

/** The error answers of an operation, one per status, each naming its codes. */
function errorResponses(codes: ErrorCode[]): Record<string, object> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) {
    const status = ERRORS[code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const out: Record<string, object> = {}
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: list.join(', '),
      ...(status === 429 || status === 503 ? { headers: { 'Retry-After': retryAfter } } : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              { type: 'object', properties: { code: { type: 'string', enum: list } } },
            ],
          },
        },
      },
    }
  }
  return out
}

/** What each tag groups, for the document's readers. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  'token handoffs':
    'Seed 002: a handoff with two bearer tokens, moved forward by compare-and-set on `from`.',
  identity: 'Seed 000: discovery, and the signing principal as the hub sees it.',
  admin: "The operator's API, behind `BATON_ADMIN_TOKEN`; never offered as MCP tools.",
  resources: 'Seed 000: versioned shared resources with history and compare-and-set updates.',
  grants: 'Seed 000: scoped, expiring, revocable grants on resources.',
  messages: 'Seed 000: durable messages with idempotency keys, sequences, acks and receipts.',
  home: "Seed 000: a principal's private home files, for checkpoints.",
  transfers: 'Seed 004: moving an agent session to another runtime under a budget.',
  operations: 'Liveness, readiness, metrics and this document.',
  mcp: 'The Model Context Protocol over Streamable HTTP.',
}

function operationDoc(op: Operation, config: Config): object {
  const { params, query, body } = inputSchemas(op, config)
  const parameters: object[] = []
  for (const [name, schema] of Object.entries(params?.shape ?? {})) {
    const s = schema as z.ZodType
    parameters.push({
      name,
      in: 'path',
      required: true,
      ...(s.description ? { description: s.description } : {}),
      schema: jsonSchema(s, 'input'),
    })
  }
  for (const [name, schema] of Object.entries(query?.shape ?? {})) {
    const s = schema as z.ZodType
    parameters.push({
      name,
      in: 'query',
      required: !s.safeParse(undefined).success,
      ...(s.description ? { description: s.description } : {}),
      schema: jsonSchema(s, 'input'),
    })
  }
  if (op.idempotencyKey) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: IdempotencyKeyHeader.description,
      schema: jsonSchema(IdempotencyKeyHeader, 'input'),
    })
  }
  const status = String(op.status ?? 200)
  return {
    operationId: op.name,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags,
    security: AUTH_KINDS[op.auth].security,
    ...(parameters.length ? { parameters } : {}),
    ...(body
      ? {
          requestBody: {
            required: !body.safeParse(undefined).success,
            content: { 'application/json': { schema: jsonSchema(body, 'input') } },
          },
        }
      : {}),
    responses: {
      [status]: {
        description: op.summary,
        ...(op.cache ? { headers: cacheHeaders(op.cache.maxAgeSeconds) } : {}),
        content: { 'application/json': { schema: jsonSchema(op.output, 'output') } },
      },
      ...(op.cache
        ? {
            '304': {
              description: 'Not modified: the If-None-Match sent names the current answer',
              headers: cacheHeaders(op.cache.maxAgeSeconds),
            },
          }
        : {}),
      ...errorResponses(operationErrors(op)),
    },
  }
}

/** The OpenAPI 3.1 document of every operation, with the extra documented routes. */
export function openApiDocument(
  ops: readonly Operation[],
  extra: readonly ExtraPath[],
  info: { version: string; serverUrl: string; config: Config },
): object {
  const paths: Record<string, Record<string, object>> = {}
  const add = (path: string, method: string, doc: object) => {
    const key = path.replace(/:([A-Za-z_]+)/g, '{$1}')
    paths[key] ??= {}
    paths[key][method.toLowerCase()] = doc
  }
  for (const op of ops) add(op.path, op.method, operationDoc(op, info.config))
  for (const e of extra) {
    add(e.path, e.method, {
      operationId: e.operationId,
      summary: e.summary,
      tags: e.tags,
      security: [],
      responses: { ...e.responses, ...errorResponses(['rate_limited', 'internal']) },
    })
  }
  const tags = [...new Set([...ops.flatMap((o) => o.tags), ...extra.flatMap((e) => e.tags)])]
  return {
    openapi: '3.1.0',
    info: {
      title: 'Baton hub',
      version: info.version,
      summary: 'Reliable handoffs between AI agents',
      description:
        'Token handoffs (seed 002), signed agents with versioned resources, grants, messages and home files (seed 000), and session transfer (seed 004). Every error is `{ error, code, fix, ...context }` with a stable `code`.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      contact: { name: 'Baton maintainers' },
    },
    servers: [{ url: info.serverUrl, description: 'This hub' }],
    tags: tags.map((name) => ({
      name,
      ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}),
    })),
    paths,
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        handoffToken: {
          type: 'http',
          scheme: 'bearer',
          description: "A token handoff's owner or receiver token, shown once at create.",
        },
        operatorToken: {
          type: 'http',
          scheme: 'bearer',
          description: "The operator's secret (`BATON_ADMIN_TOKEN`).",
        },
        httpSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'Signature',
          description:
            'HTTP Message Signatures (RFC 9421) with Ed25519: `Signature-Input` covers `@method`, `@target-uri`, `content-digest` (RFC 9530, when there is a body) and `idempotency-key` (when sent), with `created`, `keyid` (the did:key of the signing key) and a fresh `nonce`; `Signature` carries the signature. OpenAPI has no scheme for message signatures, so this is described as the header it rides in; see docs/signed-requests.md for the exact algorithm and test vectors.',
        },
      },
    },
  }
}
