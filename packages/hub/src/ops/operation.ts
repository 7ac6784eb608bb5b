import type { BatonError, ErrorCode } from '@baton/protocol'
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js'
import type { z } from 'zod'
import type { AppContext } from '../app.js'
import { type Config, loadConfig } from '../config.js'
import type { WaitSignal } from '../events/wait.js'
import type { Principal } from '../identity/service.js'
import type { Carry } from '../store/transaction.js'
import type { HandedTrace } from '../telemetry/trace-context.js'

/**
 * What a caller must show: nothing, a token handoff's bearer token, a signed request (RFC 9421)
 * from an admitted principal, or the operator's bearer secret.
 */
export type Auth = 'none' | 'handoff-token' | 'signature' | 'operator'

/** Who is calling and how, as every face hands it to an operation. */
export interface Caller {
  /** The client address, for per-address quotas. */
  ip: string
  /** The origin the caller reached the hub at, when the face knows it (HTTP). */
  origin?: string | undefined
  /** The bearer token of a `handoff-token` operation. */
  token?: string | undefined
  /** The verified principal of a `signature` operation. */
  principal?: Principal | undefined
  /** An `Idempotency-Key` the caller sent, for operations that accept one. */
  idempotencyKey?: string | undefined
  /**
   * Aborts when the caller goes away (a closed connection, a cancelled MCP request). An HTTP
   * long poll's is the face's own, not an AbortSignal: pass it to waits, never to `fetch`.
   */
  signal: WaitSignal
  /**
   * A signed request's pending admission (nonce, quota charge, a new key's enrolment), which
   * commits with the first write the operation queues: the operation hands the caller to its
   * service, which passes `carry` to that write (`RunOptions.carry`). Absent for unsigned calls.
   */
  carry?: Carry | undefined
  /**
   * The W3C trace context of the request (the hub's span when tracing, else the caller's own,
   * else one the hub started), recorded with the work it hands on, so the agent that receives
   * it continues the trace.
   */
  trace?: HandedTrace | undefined
  /** Reports progress of long work (waits, uploads); faces that cannot carry it ignore it. */
  progress?: ((p: { progress: number; total?: number; message?: string }) => void) | undefined
}

/** An operation's validated input: path parameters, query and body, each by its own schema. */
export interface OperationInput<P, Q, B> {
  params: P
  query: Q
  body: B
}

/**
 * A schema (or text) as declared: fixed, or made from the hub's config where it holds a limit
 * the operator can change (`(config) => z.string().max(config.handoff.maxNoteChars)`), so every
 * face publishes and enforces the limit this hub was started with.
 */
export type Declared<T> = T | ((config: Config) => T)

/** How an operation appears as an MCP tool; `false` keeps it off MCP (operator-only work). */
export interface ToolSpec {
  name: string
  title: string
  /** What the tool does, for a model; the operation's summary when absent. */
  description?: Declared<string>
  annotations?: ToolAnnotations
  /**
   * What the tool reads from the request's `_meta` and writes to the result's (seed 003 carries
   * a Handoff object in the one and its status in the other): `read` answers the arguments with
   * what `_meta` carried merged in, before they are checked; `write` the result's `_meta`.
   */
  meta?: {
    /**
     * The arguments `read` may fill from `_meta`: optional in the tool's schema, so a call that
     * carries them there passes the SDK's check, and required by the operation's as declared.
     */
    supplies?: readonly string[]
    read(args: Record<string, unknown>, meta: Record<string, unknown>): Record<string, unknown>
    write(result: unknown): Record<string, unknown> | undefined
  }
}

/**
 * How an operation appears as a `baton` command: its two words (derived from the path and method
 * when absent), flag names kept from earlier hand-written commands, and what it prints without
 * `--json` when that is not the answer itself.
 */
export interface CliSpec {
  name?: readonly [string, string]
  /** Extra flag → input field; a field written `@field` takes the flag's value as a JSON file. */
  aliases?: Record<string, string>
  /** A field's value when the command line gives none, as the flag's text. */
  defaults?: Record<string, string>
  /** The human output; `--json` always prints the wire body. */
  text?: (output: unknown) => string
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every input type
type AnyObject = z.ZodObject<any>

/**
 * One operation, declared once: every face (HTTP routes, OpenAPI, MCP tools on both transports,
 * the CLI, the authorization matrix) is generated from this declaration, and `run` is the only
 * place it reaches the service.
 */
export interface Operation<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  O extends z.ZodType = z.ZodType,
> {
  /** The operationId: camelCase, unique. */
  name: string
  summary: string
  description?: string
  tags: string[]
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** The path with `:param` segments, as fastify takes it. */
  path: string
  auth: Auth
  /**
   * A `signature` operation that answers its signer in every admission state (pending,
   * rejected, suspended) and is not counted in its request quota, so a new key can see it waits.
   */
  admissionExempt?: boolean
  params?: Declared<P>
  query?: Declared<Q>
  body?: Declared<B>
  /** The answer's schema; MCP tools check their structured content against it. */
  output: O
  /** The status of a successful answer (default 200). */
  status?: number
  /** Every error code the operation itself can answer (the common ones are added by auth). */
  errors: ErrorCode[]
  /**
   * Largest body this operation reads, when smaller or larger than the hub's default; a function
   * when the limit is configured (a snapshot's).
   */
  bodyLimit?: number | ((config: Config) => number)
  /**
   * What a body nested past the hub's JSON guard (MAX_JSON_DEPTH) answers instead of
   * `invalid_request`, for an operation whose contract bounds nesting with a code of its own;
   * `field` is the dotted place the guard stopped at. Answering undefined keeps the guard's error.
   */
  tooDeep?: (field: string) => BatonError | undefined
  /** Whether an `Idempotency-Key` header makes the call safe to repeat. */
  idempotencyKey?: boolean
  /**
   * Whether the operation may hold its answer (a long poll) and so reads `caller.signal`. Only
   * these get a signal that aborts when an HTTP caller goes away; others get one that never does.
   */
  longPoll?: boolean
  /** How it appears as an MCP tool, or `false` for never. */
  tool: ToolSpec | false
  /** Its `baton` command's words (`['resources', 'update']`), or more; derived when absent. */
  cli?: readonly [string, string] | CliSpec
  run(
    ctx: AppContext,
    caller: Caller,
    input: OperationInput<z.output<P>, z.output<Q>, z.output<B>>,
  ): Promise<z.output<O>>
}

/** Declares an operation, keeping its input and output types for `run`. */
export function defineOperation<
  P extends AnyObject,
  Q extends AnyObject,
  B extends z.ZodType,
  O extends z.ZodType,
>(op: Operation<P, Q, B, O>): Operation {
  return op as unknown as Operation
}

/** An operation's input schemas as this hub's config makes them (see {@link Declared}). */
export interface InputSchemas {
  params?: AnyObject | undefined
  query?: AnyObject | undefined
  body?: z.ZodType | undefined
}

const made = new WeakMap<Operation, { config: Config; schemas: InputSchemas }>()

const declared = <T>(d: Declared<T> | undefined, config: Config): T | undefined =>
  typeof d === 'function' ? (d as (c: Config) => T)(config) : d

/**
 * The input schemas of an operation under `config`, made once per operation and config: every
 * face reads them here, so the route, the OpenAPI document, the MCP tool and the CLI all hold
 * the limits the hub runs with.
 */
export function inputSchemas(op: Operation, config: Config): InputSchemas {
  const known = made.get(op)
  if (known?.config === config) return known.schemas
  const schemas = {
    params: declared(op.params, config),
    query: declared(op.query, config),
    body: declared(op.body, config),
  }
  made.set(op, { config, schemas })
  return schemas
}

/** A tool's description under `config`: its own, or the operation's summary. */
export function toolDescription(op: Operation, config: Config): string {
  return (op.tool !== false ? declared(op.tool.description, config) : undefined) ?? op.summary
}

let defaults: Config | undefined
/**
 * The config of a hub started with no settings: what faces outside a hub (the CLI, `baton mcp`)
 * publish, since the hub they reach checks its own.
 */
export function defaultConfig(): Config {
  defaults ??= loadConfig({})
  return defaults
}
