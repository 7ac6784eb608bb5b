import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import { z } from 'zod'
import type { Config } from '../config.js'
import { toBatonError } from '../http/errors.js'
import { Carry } from '../store/transaction.js'
import { type HandedTrace, handOn, parseTraceparent } from '../telemetry/trace-context.js'
import { AUTH_KINDS } from './auth-kinds.js'
import {
  type Auth,
  type Caller,
  type Declared,
  inputSchemas,
  type Operation,
  type OperationInput,
  toolDescription,
} from './operation.js'

/**
 * Runs one operation for a tool call: in the hub it is the operation's own `run`; in
 * `baton mcp --hub URL` it is a request to a hub built from the operation's HTTP declaration.
 */
export type Invoke = (
  op: Operation,
  input: OperationInput<unknown, unknown, unknown>,
  caller: Pick<Caller, 'token' | 'signal' | 'progress' | 'idempotencyKey' | 'carry' | 'trace'>,
) => Promise<unknown>

/**
 * A tool that is not one operation: seed 002's `read_agent_handoff` reads or waits. It names the
 * operations it reaches, so face coverage can account for them.
 */
export interface CompositeTool {
  name: string
  title: string
  description: Declared<string>
  auth: Auth
  /** Its arguments, made from the config where they hold a limit (a wait's longest seconds). */
  input: Declared<z.ZodRawShape>
  output: z.ZodObject
  ops: readonly Operation[]
  annotations?: ToolAnnotations
  call(
    invoke: Invoke,
    args: Record<string, unknown>,
    caller: Pick<Caller, 'signal' | 'progress' | 'carry' | 'trace'>,
  ): Promise<unknown>
}

/** What the flattened tool arguments of an operation are: path, query and body fields in one. */
export function toolShape(op: Operation, config: Config): Record<string, z.ZodType> {
  const { params, query, body } = inputSchemas(op, config)
  const shape: Record<string, z.ZodType> = {
    ...(params?.shape ?? {}),
    ...(query?.shape ?? {}),
  }
  if (body instanceof z.ZodObject) Object.assign(shape, body.shape)
  else if (body) shape.body = body
  const credential = AUTH_KINDS[op.auth].toolArg
  if (credential) shape[credential.name] = credential.schema
  if (op.tool !== false) {
    for (const name of op.tool.meta?.supplies ?? []) {
      const field = shape[name]
      if (field) shape[name] = field.optional()
    }
  }
  return shape
}

/**
 * Splits flattened tool arguments back into the operation's path, query and body, unvalidated:
 * the invoke validates them with the operation's schemas (in the hub) or sends them to a hub that
 * does, so a rule is checked once, in the one place every face goes through.
 */
export function splitToolArgs(
  op: Operation,
  args: Record<string, unknown>,
  config: Config,
): { input: OperationInput<unknown, unknown, unknown>; token?: string } {
  const schemas = inputSchemas(op, config)
  const pick = (keys: string[]) =>
    Object.fromEntries(keys.filter((k) => args[k] !== undefined).map((k) => [k, args[k]]))
  let body: unknown
  if (schemas.body instanceof z.ZodObject) body = pick(Object.keys(schemas.body.shape))
  else if (schemas.body) body = args.body
  return {
    input: {
      params: schemas.params ? pick(Object.keys(schemas.params.shape)) : {},
      query: schemas.query ? pick(Object.keys(schemas.query.shape)) : {},
      body,
    },
    ...(typeof args.token === 'string' ? { token: args.token } : {}),
  }
}

/**
 * Shapes a tool's answer: the result as structured content and JSON text, or a domain failure as
 * `isError: true` whose text is the same `{ error, code, fix, ...context }` as the HTTP body. An internal error is logged
 * with its cause, as the HTTP face logs it, and answered without detail.
 */
export async function toolResult(
  fn: () => Promise<unknown>,
  log?: Pick<Logger, 'error'>,
): Promise<CallToolResult> {
  try {
    const value = (await fn()) as Record<string, unknown>
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
  } catch (error) {
    const e = toBatonError(error)
    if (e.code === 'internal') log?.error({ err: error }, 'unhandled error in an MCP tool')
    // The error body rides as JSON text, not as structured content: a client checks structured
    // content against the tool's output schema, which describes the success answer only.
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(e.toBody()) }] }
  }
}

type ToolExtra = {
  signal: AbortSignal
  /** The `auth` the HTTP face set on the request the call came in (`carryingAuth`). */
  authInfo?: { extra?: Record<string, unknown> | undefined } | undefined
  _meta?: { progressToken?: string | number; [key: string]: unknown } | undefined
  /** The HTTP request that carried the call (Streamable HTTP only). */
  requestInfo?: { headers?: Record<string, string | string[] | undefined> } | undefined
  sendNotification: (n: {
    method: 'notifications/progress'
    params: { progressToken: string | number; progress: number; total?: number; message?: string }
  }) => Promise<void>
}

/**
 * The trace context a tool call hands on. The hub's own /mcp decides it with the request that
 * carried the call (`carryingAuth`): its span, so the work continues the hub's part of the
 * trace. A face without a trace of its own (`baton mcp` over stdio) hands on the caller's:
 * `_meta.traceparent` (how MCP requests carry W3C Trace Context), else the `traceparent` header
 * of the HTTP request that carried the call.
 */
function traceOf(extra: ToolExtra): HandedTrace | undefined {
  const decided = extra.authInfo?.extra?.trace as HandedTrace | undefined
  if (decided) return decided
  const headers = extra.requestInfo?.headers
  const trace =
    parseTraceparent(extra._meta?.traceparent, extra._meta?.tracestate) ??
    parseTraceparent(headers?.traceparent, headers?.tracestate)
  return trace ? handOn(trace) : undefined
}

function progressOf(extra: ToolExtra): Caller['progress'] {
  const token = extra._meta?.progressToken
  if (token === undefined) return undefined
  return (p) => {
    void extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, ...p },
      })
      .catch(() => {})
  }
}

/**
 * The MCP SDK's `authInfo` of a tool call's request: a signed request's admission, which rides
 * on the call's first write, and the trace context the call hands on. The SDK hands it to the
 * tool handler with the request, which passes both on to the operation as `Caller.carry` and
 * `Caller.trace`.
 */
export function carryingAuth(
  principal: string,
  carry: Carry | undefined,
  trace: HandedTrace | undefined,
): {
  token: string
  clientId: string
  scopes: string[]
  extra: { carry: Carry | undefined; trace: HandedTrace | undefined }
} {
  return { token: '', clientId: principal, scopes: [], extra: { carry, trace } }
}

function carryOf(extra: ToolExtra): Carry | undefined {
  const carry = extra.authInfo?.extra?.carry
  return carry instanceof Carry ? carry : undefined
}

/** Whether an operation is offered as a tool to a session with these kinds of auth. */
export function offeredAsTool(op: Operation, auths: ReadonlySet<Auth>): boolean {
  return op.tool !== false && AUTH_KINDS[op.auth].mcp !== 'never' && auths.has(op.auth)
}

/**
 * Registers every operation (and composite tool) a session may reach as an MCP tool, with its
 * input and output schemas; minting tokens and admission (operator auth) are never tools.
 */
/** Runs a call's work and answers once its carried write is durable. */
export type Settling = <T>(carry: Carry | undefined, work: () => Promise<T>) => Promise<T>

export function registerOperationTools(
  server: McpServer,
  opts: {
    ops: readonly Operation[]
    composites: readonly CompositeTool[]
    auths: ReadonlySet<Auth>
    /** The config whose limits the tools' schemas hold: the hub's, or a default one's. */
    config: Config
    invoke: Invoke
    log?: Pick<Logger, 'error'>
    /**
     * Runs a tool call and makes its carried write (`Caller.carry`) durable before the call is
     * answered: once per call, after all of its invokes, so a composite tool that reads and then
     * writes commits its carried write with that write.
     */
    settleAfter?: Settling
  },
): void {
  const settled = <T>(carry: Carry | undefined, fn: () => Promise<T>): Promise<T> =>
    opts.settleAfter ? opts.settleAfter(carry, fn) : fn()
  for (const op of opts.ops) {
    if (!offeredAsTool(op, opts.auths) || op.tool === false) continue
    const tool = op.tool
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: toolDescription(op, opts.config),
        inputSchema: toolShape(op, opts.config),
        ...(op.output instanceof z.ZodObject ? { outputSchema: op.output.shape } : {}),
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      },
      async (args: Record<string, unknown>, extra: ToolExtra) => {
        const carry = carryOf(extra)
        const result = await toolResult(
          () =>
            settled(carry, () => {
              const carried = tool.meta && extra._meta ? tool.meta.read(args, extra._meta) : args
              const { input, token } = splitToolArgs(op, carried, opts.config)
              return opts.invoke(op, input, {
                token,
                signal: extra.signal,
                progress: progressOf(extra),
                carry,
                trace: traceOf(extra),
              })
            }),
          opts.log,
        )
        const meta = result.isError ? undefined : tool.meta?.write(result.structuredContent)
        return meta === undefined ? result : { ...result, _meta: meta }
      },
    )
  }
  for (const c of opts.composites) {
    if (!opts.auths.has(c.auth)) continue
    server.registerTool(
      c.name,
      {
        title: c.title,
        description:
          typeof c.description === 'function' ? c.description(opts.config) : c.description,
        inputSchema: typeof c.input === 'function' ? c.input(opts.config) : c.input,
        outputSchema: c.output.shape,
        ...(c.annotations ? { annotations: c.annotations } : {}),
      },
      async (args: Record<string, unknown>, extra: ToolExtra) =>
        toolResult(() => {
          const carry = carryOf(extra)
          return settled(carry, () =>
            c.call(opts.invoke, args, {
              signal: extra.signal,
              progress: progressOf(extra),
              carry,
              trace: traceOf(extra),
            }),
          )
        }, opts.log),
    )
  }
}
