import type { ErrorCode } from '@baton/protocol'
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js'
import type { z } from 'zod'
import type { AppContext } from '../app.js'
import type { Config } from '../config.js'
import type { WaitSignal } from '../events/wait.js'
import type { Principal } from '../identity/service.js'
import type { Carry } from '../store/transaction.js'

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
   * The W3C traceparent of the request (the hub's span when tracing, else the caller's own),
   * recorded with the work it hands on, so the agent that receives it continues the trace.
   */
  trace?: string | undefined
  /** Reports progress of long work (waits, uploads); faces that cannot carry it ignore it. */
  progress?: ((p: { progress: number; total?: number; message?: string }) => void) | undefined
}

/** An operation's validated input: path parameters, query and body, each by its own schema. */
export interface OperationInput<P, Q, B> {
  params: P
  query: Q
  body: B
}

/** How an operation appears as an MCP tool; `false` keeps it off MCP (operator-only work). */
export interface ToolSpec {
  name: string
  title: string
  /** What the tool does, for a model; the operation's summary when absent. */
  description?: string
  annotations?: ToolAnnotations
  /**
   * What the tool reads from the request's `_meta` and writes to the result's (seed 003 carries
   * a Handoff object in the one and its status in the other): `read` answers the arguments with
   * what `_meta` carried merged in, before they are checked; `write` the result's `_meta`.
   */
  meta?: {
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
  params?: P
  query?: Q
  body?: B
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
