import { ERRORS } from '@baton/protocol'
import { z } from 'zod'

/** What the OpenAPI document needs to know of one route. */
export interface RouteDoc {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  operationId: string
  summary: string
  tags: string[]
  body?: z.ZodType
  query?: Record<string, { description: string; required?: boolean; schema?: object }>
  headers?: Record<string, { description: string; required?: boolean }>
  pathParams?: Record<string, string>
  responses: Record<number, { description: string; schema?: object | z.ZodType }>
  security?: 'bearer' | 'none' | 'signature'
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

/**
 * A JSON Schema for a zod schema, self-contained: recursive parts (such as arbitrary JSON) are
 * rendered as `{}` so that no `$ref` points outside the schema inside the OpenAPI document.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): object {
  const {
    $schema: _schema,
    $defs: _defs,
    ...rest
  } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  return dropLocalRefs(rest) as object
}

function dropLocalRefs(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropLocalRefs)
  if (!v || typeof v !== 'object') return v
  const o = v as Record<string, unknown>
  if (typeof o.$ref === 'string' && o.$ref.startsWith('#/$defs/')) return {}
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, dropLocalRefs(x)]))
}

/** Collects route docs and renders an OpenAPI 3.1 document. */
export class OpenApiBuilder {
  private readonly routes: RouteDoc[] = []

  add(route: RouteDoc): void {
    this.routes.push(route)
  }

  document(info: { title: string; version: string }): object {
    const paths: Record<string, Record<string, object>> = {}
    for (const r of this.routes) {
      const path = r.url.replace(/:([A-Za-z_]+)/g, '{$1}')
      const parameters: object[] = []
      for (const [name, description] of Object.entries(r.pathParams ?? {})) {
        parameters.push({
          name,
          in: 'path',
          required: true,
          description,
          schema: { type: 'string' },
        })
      }
      for (const [name, q] of Object.entries(r.query ?? {})) {
        parameters.push({
          name,
          in: 'query',
          required: q.required ?? false,
          description: q.description,
          schema: q.schema ?? { type: 'string' },
        })
      }
      for (const [name, h] of Object.entries(r.headers ?? {})) {
        parameters.push({
          name,
          in: 'header',
          required: h.required ?? false,
          description: h.description,
          schema: { type: 'string' },
        })
      }
      const responses: Record<string, object> = {}
      for (const [status, resp] of Object.entries(r.responses)) {
        const isError = Number(status) >= 400
        const schema =
          resp.schema instanceof z.ZodType
            ? jsonSchema(resp.schema, 'output')
            : (resp.schema ?? (isError ? { $ref: '#/components/schemas/Error' } : undefined))
        responses[status] = schema
          ? { description: resp.description, content: { 'application/json': { schema } } }
          : { description: resp.description }
      }
      const op: Record<string, unknown> = {
        operationId: r.operationId,
        summary: r.summary,
        tags: r.tags,
        parameters,
        responses,
      }
      if (r.body) {
        op.requestBody = {
          required: true,
          content: {
            'application/json': {
              schema: jsonSchema(r.body, 'input'),
            },
          },
        }
      }
      if (r.security === 'bearer') op.security = [{ bearer: [] }]
      if (r.security === 'signature') op.security = [{ httpSignature: [] }]
      paths[path] ??= {}
      paths[path][r.method.toLowerCase()] = op
    }
    return {
      openapi: '3.1.0',
      info,
      paths,
      components: {
        schemas: { Error: errorSchema },
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'A handoff owner or receiver token',
          },
          httpSignature: {
            type: 'apiKey',
            in: 'header',
            name: 'Signature',
            description: 'HTTP Message Signatures (RFC 9421), ed25519, with Signature-Input',
          },
        },
      },
    }
  }
}
