import { BatonError, type ContractConfig } from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from 'pino'
import { z } from 'zod'
import { toBatonError } from '../http/errors.js'
import { isDepthRefusal, refusedEnvelope } from '../http/json-guard.js'
import { Carry } from '../store/transaction.js'
import { type HandedTrace, handOn, parseTraceparent } from '../telemetry/trace-context.js'
import { AUTH_KINDS } from './auth-kinds.js'
import { jsonSchema } from './openapi.js'
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

/** A tool argument that is one field of an operation's input: its schema, under the tool's name. */
export interface ToolArg {
  op: Operation
  part: 'params' | 'query' | 'body'
  field: string
  /** Optional in the tool where the operation requires it (the tool then calls another one). */
  optional?: boolean
}

/** Declares that a tool argument is `op`'s `part.field`, with that field's schema. */
export function toolArg(
  op: Operation,
  part: ToolArg['part'],
  field: string,
  opts: { optional?: boolean } = {},
): ToolArg {
  return { op, part, field, ...opts }
}

/**
 * A tool that is not one operation as it stands: seed 002's `read_agent_handoff` reads or waits,
 * seed 004's tools name a transfer `transferId` where its route's path says `id`. It is a declared
 * mapping of its arguments onto its operations' inputs, with no schema of its own: each argument
 * is a field of an operation's contract, so the tool publishes and enforces the contract's rule.
 */
export interface CompositeTool {
  name: string
  title: string
  description: Declared<string>
  auth: Auth
  /** Its arguments, each one field of an operation's input (the credential is the auth's). */
  args: Record<string, ToolArg>
  /** Its answer: the answer of the operation it ends with. */
  output: z.ZodObject
  ops: readonly Operation[]
  annotations?: ToolAnnotations
  call(
    invoke: Invoke,
    args: Record<string, unknown>,
    caller: Pick<Caller, 'signal' | 'progress' | 'carry' | 'trace'>,
  ): Promise<unknown>
}

/** A composite tool's arguments as the contracts it maps onto make them under `config`. */
export function compositeShape(
  c: CompositeTool,
  config: ContractConfig,
): Record<string, z.ZodType> {
  const shape: Record<string, z.ZodType> = {}
  for (const [name, a] of Object.entries(c.args)) {
    const part = inputSchemas(a.op, config)[a.part]
    let field = part instanceof z.ZodObject ? (part.shape[a.field] as z.ZodType) : undefined
    if (!field) throw new Error(`${c.name}: ${a.op.name} has no ${a.part} field ${a.field}`)
    if (a.optional) field = field.optional()
    shape[name] = field
  }
  const credential = AUTH_KINDS[c.auth].toolArg
  if (credential) shape[credential.name] = z.string().describe(credential.description)
  return shape
}

/**
 * The invoke a composite's `call` uses: a refusal of an operation's field names the tool's
 * argument it came from, so a caller is told about the argument it sent.
 */
function renaming(c: CompositeTool, invoke: Invoke): Invoke {
  return async (op, input, caller) => {
    try {
      return await invoke(op, input, caller)
    } catch (error) {
      const field = error instanceof BatonError ? error.context.field : undefined
      const arg = Object.entries(c.args).find(([, a]) => a.op === op && a.field === field)?.[0]
      if (arg === undefined || !(error instanceof BatonError)) throw error
      throw new BatonError(error.code, error.message.replaceAll(String(field), arg), {
        ...error.context,
        field: arg,
      })
    }
  }
}

/** What the flattened tool arguments of an operation are: path, query and body fields in one. */
export function toolShape(op: Operation, config: ContractConfig): Record<string, z.ZodType> {
  const { params, query, body } = inputSchemas(op, config)
  const shape: Record<string, z.ZodType> = {
    ...(params?.shape ?? {}),
    ...(query?.shape ?? {}),
  }
  if (body instanceof z.ZodObject) Object.assign(shape, body.shape)
  else if (body) shape.body = body
  const credential = AUTH_KINDS[op.auth].toolArg
  if (credential) shape[credential.name] = z.string().describe(credential.description)
  if (op.tool !== false) {
    for (const name of op.tool.supplies ?? []) {
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
  config: ContractConfig,
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

/** Where an MCP tool call's arguments sit in its JSON-RPC body, as the JSON guard names fields. */
const ARGUMENTS = 'params.arguments.'

/**
 * The answer of a tool call whose arguments the hub's JSON guard refused for their depth, when
 * the tool's operation has a depth code of its own (`tooDeep`): the same tool error its HTTP
 * route answers, for the call's JSON-RPC id. Undefined for any other refusal, which the MCP face
 * answers as before.
 */
export function tooDeepToolCall(
  ops: readonly Operation[],
  error: unknown,
): { jsonrpc: '2.0'; id: string | number; result: CallToolResult } | undefined {
  if (!isDepthRefusal(error)) return undefined
  const field = error.context.field as string
  if (!field.startsWith(ARGUMENTS)) return undefined
  // The call's id, method and tool name sit two levels deep; its arguments are not parsed.
  const call = refusedEnvelope(error, 2) as {
    id?: unknown
    method?: unknown
    params?: { name?: unknown } | null
  } | null
  const id = call?.id
  const name = call?.params?.name
  if (call?.method !== 'tools/call' || (typeof id !== 'string' && typeof id !== 'number')) {
    return undefined
  }
  const op = ops.find((o) => o.tool !== false && o.tool?.name === name && o.tooDeep)
  const refusal = op?.tooDeep?.(field.slice(ARGUMENTS.length))
  if (!refusal) return undefined
  const result: CallToolResult = {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(refusal.toBody()) }],
  }
  return { jsonrpc: '2.0', id, result }
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

/** Runs a call's work and answers once its carried write is durable. */
export type Settling = <T>(carry: Carry | undefined, work: () => Promise<T>) => Promise<T>

/** A tool as `tools/list` shows it and how a call of it runs. */
interface ToolEntry {
  listing: Tool
  /** The argument names the tool takes; any other is `unknown_field`. */
  names: ReadonlySet<string>
  run(args: Record<string, unknown>, extra: ToolExtra): Promise<CallToolResult>
}

/** A tool's input schema: an object of exactly these arguments, as JSON Schema. */
function inputJsonSchema(shape: Record<string, z.ZodType>): Tool['inputSchema'] {
  return jsonSchema(z.strictObject(shape), 'input') as Tool['inputSchema']
}

/** Refuses an argument the tool does not take, as a route refuses an unknown field. */
function assertKnownArgs(args: Record<string, unknown>, names: ReadonlySet<string>): void {
  const unknown = Object.keys(args).find((k) => !names.has(k))
  if (unknown !== undefined) {
    throw new BatonError('unknown_field', `Unknown field ${JSON.stringify(unknown)} in arguments`, {
      field: unknown,
    })
  }
}

/**
 * Serves every operation (and composite tool) a session may reach as an MCP tool, with input and
 * output schemas made from the contracts; minting tokens and admission (operator auth) are never
 * tools. The server lists and calls the tools itself rather than through the SDK's tool
 * registry, so a call's arguments are checked once, by the operation's own schemas, and a refusal
 * answers the same code and `fix` as the HTTP route, where the SDK would parse them first and
 * refuse with text of its own.
 */
export function registerOperationTools(
  server: McpServer,
  opts: {
    ops: readonly Operation[]
    composites: readonly CompositeTool[]
    auths: ReadonlySet<Auth>
    /** The limits the tools' schemas hold: the hub's own. */
    config: ContractConfig
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
  const tools = new Map<string, ToolEntry>()
  for (const op of opts.ops) {
    if (!offeredAsTool(op, opts.auths) || op.tool === false) continue
    const tool = op.tool
    const shape = toolShape(op, opts.config)
    const names = new Set(Object.keys(shape))
    tools.set(tool.name, {
      names,
      listing: {
        name: tool.name,
        title: tool.title,
        description: toolDescription(op, opts.config),
        inputSchema: inputJsonSchema(shape),
        ...(op.output instanceof z.ZodObject
          ? { outputSchema: jsonSchema(op.output, 'output') as Tool['outputSchema'] }
          : {}),
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      },
      async run(args, extra) {
        const carry = carryOf(extra)
        const result = await toolResult(
          () =>
            settled(carry, () => {
              const carried =
                op.toolMeta && extra._meta ? op.toolMeta.read(args, extra._meta) : args
              assertKnownArgs(carried, names)
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
        const meta = result.isError ? undefined : op.toolMeta?.write(result.structuredContent)
        return meta === undefined ? result : { ...result, _meta: meta }
      },
    })
  }
  for (const c of opts.composites) {
    if (!opts.auths.has(c.auth)) continue
    const shape = compositeShape(c, opts.config)
    const names = new Set(Object.keys(shape))
    const invoke = renaming(c, opts.invoke)
    tools.set(c.name, {
      names,
      listing: {
        name: c.name,
        title: c.title,
        description:
          typeof c.description === 'function' ? c.description(opts.config) : c.description,
        inputSchema: inputJsonSchema(shape),
        outputSchema: jsonSchema(c.output, 'output') as Tool['outputSchema'],
        ...(c.annotations ? { annotations: c.annotations } : {}),
      },
      run: (args, extra) =>
        toolResult(() => {
          assertKnownArgs(args, names)
          const carry = carryOf(extra)
          return settled(carry, () =>
            c.call(invoke, args, {
              signal: extra.signal,
              progress: progressOf(extra),
              carry,
              trace: traceOf(extra),
            }),
          )
        }, opts.log),
    })
  }
  server.server.registerCapabilities({ tools: { listChanged: false } })
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...tools.values()].map((t) => t.listing),
  }))
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools.get(request.params.name)
    // MCP: an unknown tool is a protocol error, not a tool result.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`)
    return tool.run(request.params.arguments ?? {}, {
      ...extra,
      _meta: request.params._meta,
    } as ToolExtra)
  })
}
