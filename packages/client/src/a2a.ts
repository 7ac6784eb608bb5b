import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import type { Identity } from './identity.js'
import { type FetchLike, type SignedFetchOptions, signedFetch } from './signed-fetch.js'

export { A2A_RELAY_EXTENSION_URI }

/**
 * A `fetch` for an A2A client that signs every request as `identity`, as the hub's A2A endpoint
 * (`/v1/a2a`) requires, so any A2A SDK that takes a fetch speaks to the hub as an agent.
 *
 * @example
 * const factory = new ClientFactory({
 *   transports: [new JsonRpcTransportFactory({ fetchImpl: a2aFetch(identity) })],
 * })
 */
export function a2aFetch(identity: Identity, options: SignedFetchOptions = {}): FetchLike {
  return signedFetch(identity, options)
}

/** An agent card's interfaces, as much of them as {@link addressTo} reads. */
export interface AddressableCard {
  supportedInterfaces: { tenant?: string }[]
}

/**
 * The hub's agent card addressed to one agent: every interface's `tenant` set to its did:key,
 * so an A2A client built from it creates tasks for that agent (A2A 1.0 names the agent behind a
 * shared endpoint by its tenant).
 *
 * @example
 * const client = await factory.createFromAgentCard(addressTo(hubCard, coderPrincipal))
 */
export function addressTo<C extends AddressableCard>(card: C, principal: string): C {
  return {
    ...card,
    supportedInterfaces: card.supportedInterfaces.map((i) => ({ ...i, tenant: principal })),
  }
}

/** What the hub adds under {@link A2A_RELAY_EXTENSION_URI} to a task's or an event's metadata. */
export interface RelayMetadata {
  generation: number
  owner: string
  agent: string
  /** The hub's view of a hop carried in the task's messages (seed 003), when one was. */
  handoff?: unknown
}

/** Reads the hub's relay metadata from a task's or an event's metadata; undefined when absent. */
export function readRelay(
  metadata: Record<string, unknown> | undefined,
): RelayMetadata | undefined {
  const value = metadata?.[A2A_RELAY_EXTENSION_URI]
  return value && typeof value === 'object' ? (value as RelayMetadata) : undefined
}

/** What the agent of a task may set on it through its own SendMessage. */
export interface RelayUpdate {
  /** The task's new state, as an A2A 1.0 enum name (`TASK_STATE_COMPLETED`). */
  state?: string
  /** Artifacts to add, as A2A 1.0 ProtoJSON. */
  artifacts?: { artifact: Record<string, unknown>; append?: boolean; lastChunk?: boolean }[]
  /** Refuse the send unless the task is at this generation (A2A dev-1.1 compare-and-set). */
  ifGenerationMatch?: number
}

/**
 * The SendMessage `metadata` that carries a relay update, for A2A 1.0 clients whose request types
 * drop the dev-1.1 `ifGenerationMatch` and have no field for a state.
 *
 * @example
 * await client.sendMessage(SendMessageRequest.fromJSON({
 *   message: { messageId, role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId },
 *   metadata: relayUpdate({ state: 'TASK_STATE_COMPLETED', ifGenerationMatch: 3 }),
 * }))
 */
export function relayUpdate(update: RelayUpdate): Record<string, unknown> {
  return { [A2A_RELAY_EXTENSION_URI]: update }
}

/**
 * The header that carries the dev-1.1 `currentGeneration` of a GetTask for A2A clients whose
 * request type drops the field (the official SDK's 1.x); the hub reads it as that field.
 */
export const A2A_CURRENT_GENERATION_HEADER = 'Baton-Current-Generation'

/** An A2A SDK call's options, as much of them as {@link waitPastGeneration} sets. */
export interface A2aCallOptions {
  serviceParameters?: Record<string, string>
}

/**
 * Call options that make an A2A SDK's `getTask` the dev-1.1 long poll: the hub answers once the
 * task's generation passes `generation` (at once if it already has, else within its longest
 * wait), through a service parameter, since the SDK's GetTask type has no `currentGeneration`.
 *
 * @example
 * const moved = await client.getTask({ id: task.id }, waitPastGeneration(readRelay(task.metadata)!.generation))
 */
export function waitPastGeneration<O extends A2aCallOptions>(generation: number, options?: O): O {
  return {
    ...(options as O),
    serviceParameters: {
      ...options?.serviceParameters,
      [A2A_CURRENT_GENERATION_HEADER]: String(generation),
    },
  }
}

/** The JSON-RPC code of A2A dev-1.1 TaskGenerationMismatchError (HTTP 409 Conflict). */
export const A2A_GENERATION_MISMATCH = -32010

/**
 * The task's generation now, when `error` is the hub's refusal of a stale `ifGenerationMatch`
 * (JSON-RPC -32010, which the official SDK's 1.x throws as a plain transport error); undefined
 * for any other error.
 *
 * @example
 * try { await client.sendMessage(update) } catch (e) {
 *   const mismatch = readGenerationMismatch(e)
 *   if (!mismatch) throw e
 *   // read the task again; it is at mismatch.currentGeneration
 * }
 */
export function readGenerationMismatch(error: unknown): { currentGeneration: number } | undefined {
  const e = error as {
    envelopeCode?: unknown
    data?: { code?: unknown; currentGeneration?: unknown }
  }
  if (e?.envelopeCode !== A2A_GENERATION_MISMATCH && e?.data?.code !== 'a2a_generation_mismatch') {
    return undefined
  }
  const current = Number(e.data?.currentGeneration)
  return Number.isSafeInteger(current) ? { currentGeneration: current } : undefined
}
