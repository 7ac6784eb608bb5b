import {
  type Auth,
  type BatonError,
  type CliSpec,
  type Contract,
  type ContractConfig,
  type ContractSchemas,
  contractSchemas,
  toolDescription as contractToolDescription,
  type Declared,
  type Made,
  type ParsedInput,
  type ToolSpec,
} from '@baton/protocol'
import type { z } from 'zod'
import type { AppContext } from '../app.js'
import { type Config, loadConfig } from '../config.js'
import type { WaitSignal } from '../events/wait.js'
import type { Principal } from '../identity/service.js'
import type { Carry } from '../store/transaction.js'
import type { HandedTrace } from '../telemetry/trace-context.js'

export type { Auth, CliSpec, Declared, ToolSpec }

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
export type OperationInput<P, Q, B> = ParsedInput<P, Q, B>

/**
 * What an MCP tool reads from the request's `_meta` and writes to the result's (seed 003 carries
 * a Handoff object in the one and its status in the other): `read` answers the arguments with
 * what `_meta` carried merged in, before they are checked (the contract's `tool.supplies` names
 * which); `write` the result's `_meta`.
 */
export interface ToolMeta {
  read(args: Record<string, unknown>, meta: Record<string, unknown>): Record<string, unknown>
  write(result: unknown): Record<string, unknown> | undefined
}

/** What a binding adds to its contract beyond `run`: how some faces carry it. */
export interface BindingExtras {
  toolMeta?: ToolMeta
  /**
   * What a body nested past the hub's JSON guard (MAX_JSON_DEPTH) answers instead of
   * `invalid_request`, for an operation whose contract bounds nesting with a code of its own;
   * `field` is the dotted place the guard stopped at. Answering undefined keeps the guard's error.
   */
  tooDeep?: (field: string) => BatonError | undefined
}

/**
 * One operation: its contract (declared once, in `@baton/protocol`, where every face is generated
 * from) and the hub's binding of it to a service call, `run`, the only place it reaches a service.
 */
export interface Operation extends Contract, BindingExtras {
  /** The contract this operation binds. */
  contract: Contract
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every input type
  run(ctx: AppContext, caller: Caller, input: OperationInput<any, any, any>): Promise<unknown>
}

type Parsed<D> = [D] extends [never] ? Record<string, never> : z.output<Made<D> & z.ZodType>

/**
 * Binds a contract to its service call: `run` receives the input as the contract's schemas
 * parsed it and answers the contract's output.
 */
export function bind<
  P extends AnyObject,
  Q extends AnyObject,
  B extends z.ZodType,
  O extends z.ZodType,
>(
  contract: Contract<P, Q, B, O>,
  run: (
    ctx: AppContext,
    caller: Caller,
    input: OperationInput<
      Parsed<P>,
      Parsed<Q>,
      [B] extends [never] ? undefined : z.output<Made<B> & z.ZodType>
    >,
  ) => Promise<z.output<O>>,
  extras: BindingExtras = {},
): Operation {
  return {
    ...(contract as unknown as Contract),
    contract: contract as unknown as Contract,
    run,
    ...extras,
  } as Operation
}

// biome-ignore lint/suspicious/noExplicitAny: contracts of every input type
type AnyObject = z.ZodObject<any>

/** An operation's input schemas as this hub's config makes them. */
export type InputSchemas = ContractSchemas

/**
 * The input schemas of an operation under `config`, made once per contract and config: every
 * face reads them here, so the route, the OpenAPI document, the MCP tool and the CLI all hold
 * the limits the hub runs with.
 */
export function inputSchemas(op: Operation, config: ContractConfig): InputSchemas {
  return contractSchemas(op.contract, config)
}

/** A tool's description under `config`: its own, or the operation's summary. */
export function toolDescription(op: Operation, config: ContractConfig): string {
  return contractToolDescription(op.contract, config)
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
