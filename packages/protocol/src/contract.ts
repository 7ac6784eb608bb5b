import { z } from 'zod'
import { COMPUTE_LIMITS } from './compute.js'
import type { ErrorCode } from './errors.js'
import { HANDOFF_LIMITS } from './handoff.js'
import { HOME_LIMITS } from './home.js'
import { MESSAGE_LIMITS } from './messages.js'
import { RESOURCE_LIMITS } from './resources.js'
import { TRANSFER_LIMITS } from './transfers.js'

/**
 * What a caller must show: nothing, a token handoff's bearer token, a signed request (RFC 9421)
 * from an admitted principal, or the operator's bearer secret.
 */
export type Auth = 'none' | 'handoff-token' | 'signature' | 'operator'

/**
 * The limits a hub's operator may change that contracts publish: a contract whose schema holds
 * one is made from this, so the route, the OpenAPI document, the MCP tool, the CLI and the SDK
 * all hold the limit the hub runs with.
 */
export interface ContractConfig {
  handoff: {
    maxPayloadBytes: number
    maxNoteChars: number
    maxStates: number
    maxWaitSeconds: number
  }
  resources: { maxBytes: number; grantMaxTtlMs: number; maxPageSize: number }
  messages: { maxBodyBytes: number; maxWaitSeconds: number }
  home: { maxFileBytes: number; maxPageSize: number }
  transfer: { maxWaitSeconds: number; snapshotMaxBytes: number }
  compute: { maxWaitSeconds: number }
}

const limit = () => z.number().int().min(0)

/** The {@link ContractConfig} a hub publishes in its discovery document, so clients hold its limits. */
export const ContractLimits = z.object({
  handoff: z.object({
    maxPayloadBytes: limit(),
    maxNoteChars: limit(),
    maxStates: limit(),
    maxWaitSeconds: limit(),
  }),
  resources: z.object({ maxBytes: limit(), grantMaxTtlMs: limit(), maxPageSize: limit() }),
  messages: z.object({ maxBodyBytes: limit(), maxWaitSeconds: limit() }),
  home: z.object({ maxFileBytes: limit(), maxPageSize: limit() }),
  transfer: z.object({ maxWaitSeconds: limit(), snapshotMaxBytes: limit() }),
  compute: z.object({ maxWaitSeconds: limit() }),
}) satisfies z.ZodType<ContractConfig>

/** The limits that shape a hub's contracts, and no other setting of its config. */
export function contractLimitsOf(config: ContractConfig): ContractConfig {
  return ContractLimits.parse(config)
}

/** The limits of a hub started with no settings: what a face outside a hub publishes. */
export const DEFAULT_CONTRACT_CONFIG: ContractConfig = {
  handoff: {
    maxPayloadBytes: HANDOFF_LIMITS.maxPayloadBytes,
    maxNoteChars: HANDOFF_LIMITS.maxNoteChars,
    maxStates: HANDOFF_LIMITS.maxStates,
    maxWaitSeconds: HANDOFF_LIMITS.maxWaitSeconds,
  },
  resources: {
    maxBytes: RESOURCE_LIMITS.maxBytes,
    grantMaxTtlMs: RESOURCE_LIMITS.grantMaxTtlMs,
    maxPageSize: RESOURCE_LIMITS.maxPageSize,
  },
  messages: {
    maxBodyBytes: MESSAGE_LIMITS.maxBodyBytes,
    maxWaitSeconds: MESSAGE_LIMITS.maxWaitSeconds,
  },
  home: { maxFileBytes: HOME_LIMITS.maxFileBytes, maxPageSize: HOME_LIMITS.maxPageSize },
  transfer: {
    maxWaitSeconds: TRANSFER_LIMITS.maxWaitSeconds,
    snapshotMaxBytes: TRANSFER_LIMITS.snapshotMaxBytes,
  },
  compute: { maxWaitSeconds: COMPUTE_LIMITS.maxWaitSeconds },
}

/**
 * A schema (or text) as declared: fixed, or made from the hub's limits where it holds one the
 * operator can change (`(config) => z.string().max(config.handoff.maxNoteChars)`).
 */
export type Declared<T> = T | ((config: ContractConfig) => T)

/** What a {@link Declared} value is once made. */
export type Made<D> = D extends (config: ContractConfig) => infer T ? T : D

/** MCP's tool annotations (hints a client may show; never relied on for security). */
export interface ToolHints {
  title?: string
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

/** How an operation appears as an MCP tool. */
export interface ToolSpec {
  name: string
  title: string
  /** What the tool does, for a model; the contract's summary when absent. */
  description?: Declared<string>
  annotations?: ToolHints
  /**
   * Arguments a call may carry in the request's `_meta` instead (seed 003 carries a Handoff
   * object there): optional in the tool's schema, required by the contract as declared.
   */
  supplies?: readonly string[]
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
  /**
   * How the listing pages, for `--all`: the query field that names where a page starts, the
   * answer's field that names the next (null after the last), and its list of items.
   */
  pages?: { cursor: string; next: string; items: string }
}

// biome-ignore lint/suspicious/noExplicitAny: a contract list holds objects of every shape
type AnyObject = z.ZodObject<any>

/**
 * One operation's contract, as data: its route, the auth it needs, its input schemas (with
 * codecs, so a service receives the types it wants), its answer, its errors, its limits and its
 * tool and command words. Every face is generated from it — the hub's routes and OpenAPI
 * document, its MCP tools, the `baton` commands, the SDK's typed call — and what its published
 * schemas accept is exactly what the hub accepts.
 *
 * @example
 * const readMe = defineContract({
 *   name: 'readMe', summary: 'Your principal', tags: ['identity'], method: 'GET',
 *   path: '/v1/me', auth: 'signature', output: MeView, errors: [], tool: false,
 * })
 */
export interface Contract<
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
  /** The path with `:param` segments. */
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
  /** The answer's schema. */
  output: O
  /** The status of a successful answer (default 200). */
  status?: number
  /** Every error code the operation itself can answer (the common ones are added by auth). */
  errors: ErrorCode[]
  /** Largest body the operation reads, when not the hub's default (a function when configured). */
  bodyLimit?: number | ((config: ContractConfig) => number)
  /** Whether an `Idempotency-Key` header makes the call safe to repeat. */
  idempotencyKey?: boolean
  /** Whether the operation may hold its answer (a long poll). */
  longPoll?: boolean
  /**
   * How long a client may keep the answer (RFC 9111 `max-age`, private to it) before it asks
   * again with the answer's `ETag` (`If-None-Match`, answered 304 while unchanged): for a `GET`
   * whose answer changes rarely and whose live parts may be this many seconds old.
   */
  cache?: { maxAgeSeconds: number }
  /** How it appears as an MCP tool, or `false` for never. */
  tool: ToolSpec | false
  /** Its `baton` command's words, or more; derived when absent. */
  cli?: readonly [string, string] | CliSpec
}

/** Declares a contract, keeping its schemas' types for the hub's binding and the SDK's call. */
export function defineContract<
  P extends AnyObject = never,
  Q extends AnyObject = never,
  B extends z.ZodType = never,
  O extends z.ZodType = z.ZodType,
>(contract: Contract<P, Q, B, O>): Contract<P, Q, B, O> {
  return contract
}

/** A contract's input schemas as a hub's limits make them (see {@link Declared}). */
export interface ContractSchemas {
  params?: AnyObject | undefined
  query?: AnyObject | undefined
  body?: z.ZodType | undefined
}

const made = new WeakMap<object, { config: ContractConfig; schemas: ContractSchemas }>()

const make = <T>(d: Declared<T> | undefined, config: ContractConfig): T | undefined =>
  typeof d === 'function' ? (d as (c: ContractConfig) => T)(config) : d

/**
 * The input schemas of a contract under `config`, made once per contract and config: every face
 * reads them here, so each holds the limits the hub runs with.
 */
export function contractSchemas(
  contract: Contract,
  config: ContractConfig = DEFAULT_CONTRACT_CONFIG,
): ContractSchemas {
  const known = made.get(contract)
  if (known?.config === config) return known.schemas
  const schemas = {
    params: make(contract.params, config),
    query: make(contract.query, config),
    body: make(contract.body, config),
  }
  made.set(contract, { config, schemas })
  return schemas
}

/** A contract's tool description under `config`: its own, or the contract's summary. */
export function toolDescription(
  contract: Contract,
  config: ContractConfig = DEFAULT_CONTRACT_CONFIG,
): string {
  return (
    (contract.tool !== false ? make(contract.tool.description, config) : undefined) ??
    contract.summary
  )
}

type InputOf<D> = [D] extends [never] ? undefined : z.input<Made<D> & z.ZodType>
type OutputOf<D> = [D] extends [never] ? undefined : z.output<Made<D> & z.ZodType>

/** What a caller sends for a contract: its path parameters, query and body, as the wire takes them. */
export type ContractInput<C> =
  C extends Contract<infer P, infer Q, infer B, z.ZodType>
    ? ([P] extends [never] ? { params?: undefined } : { params: InputOf<P> }) &
        ([Q] extends [never] ? { query?: undefined } : { query?: InputOf<Q> }) &
        ([B] extends [never] ? { body?: undefined } : { body: InputOf<B> })
    : never

/** What a service receives for a contract: its input parsed by the contract's schemas. */
export interface ParsedInput<P, Q, B> {
  params: P
  query: Q
  body: B
}

/** A contract's input as parsed by its schemas. */
export type ContractParsedInput<C> =
  C extends Contract<infer P, infer Q, infer B, z.ZodType>
    ? ParsedInput<
        [P] extends [never] ? Record<string, never> : OutputOf<P>,
        [Q] extends [never] ? Record<string, never> : OutputOf<Q>,
        OutputOf<B>
      >
    : never

/** What a contract answers on success. */
export type ContractOutput<C> =
  C extends Contract<AnyObject, AnyObject, z.ZodType, infer O> ? z.output<O> : never

/**
 * The path and query of a contract's HTTP request for an input: `:param` segments filled in,
 * encoded, and the query's defined members as text.
 *
 * @example contractPath(readHandoff, { params: { handoff_id: 'ho_1' } }) // '/services/v1/handoff/ho_1'
 */
export function contractPath(
  contract: Pick<Contract, 'path'>,
  input: { params?: unknown; query?: unknown },
): string {
  const params = (input.params ?? {}) as Record<string, unknown>
  const path = contract.path.replace(/:([A-Za-z_]+)/g, (_, name: string) =>
    encodeURIComponent(String(params[name] ?? '')),
  )
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, unknown>)) {
    if (v !== undefined) query.set(k, String(v))
  }
  const qs = query.toString()
  return qs ? `${path}?${qs}` : path
}
