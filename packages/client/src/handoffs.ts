import {
  type AdvanceInput,
  type CreatedHandoffView,
  type CreateHandoffInput,
  contracts,
  type HandoffView,
  type MoveResultView,
  type WaitView,
} from '@baton/protocol'
import { BatonClient } from './baton-client.js'
import type { CallOptions } from './http.js'

/**
 * Token handoffs (seed 002) against a Baton hub. Each method throws a BatonError carrying the
 * hub's code and context (for a conflict: `state`, `version`, `ended`).
 *
 * @example
 * const handoffs = new HandoffClient('http://127.0.0.1:8080')
 * const h = await handoffs.create({ payload: { task: 'translate' } })
 * await handoffs.advance(h.handoff_id, 'accepted', { from: 'offered' }, h.receiver_token)
 */
export class HandoffClient {
  private readonly hub: BatonClient

  constructor(readonly hubUrl: string) {
    this.hub = new BatonClient(hubUrl)
  }

  /** Creates a handoff; pass `idempotencyKey` to make a retry answer the first result. */
  create(
    input: CreateHandoffInput,
    options?: CallOptions & { idempotencyKey?: string },
  ): Promise<CreatedHandoffView> {
    return this.hub.call(contracts.createHandoff, { body: input }, options)
  }

  /** Reads a handoff with either token. */
  read(id: string, token: string, options?: CallOptions): Promise<HandoffView> {
    return this.hub.call(
      contracts.readHandoff,
      { params: { handoff_id: id } },
      { ...options, token },
    )
  }

  /** Moves a handoff to `state` only from exactly `input.from`. */
  advance(
    id: string,
    state: string,
    input: AdvanceInput,
    token: string,
    options?: CallOptions,
  ): Promise<MoveResultView> {
    return this.hub.call(
      contracts.advanceHandoff,
      { params: { handoff_id: id, state }, body: input },
      { ...options, token },
    )
  }

  /** Waits up to `seconds` (clamped to the hub's longest wait) for a change after `version`, or for the end. */
  wait(
    id: string,
    token: string,
    seconds: number,
    version?: number,
    options?: CallOptions,
  ): Promise<WaitView> {
    return this.hub.call(
      contracts.waitHandoff,
      { params: { handoff_id: id, seconds }, query: version === undefined ? {} : { version } },
      { ...options, token },
    )
  }
}
