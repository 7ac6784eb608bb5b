import type {
  AdvanceInput,
  CreatedHandoffView,
  CreateHandoffInput,
  HandoffView,
  MoveResultView,
  WaitView,
} from '@baton/protocol'
import { type CallOptions, callJson } from './http.js'

const base = '/services/v1/handoff'
const auth = (token: string, options?: CallOptions): CallOptions => ({
  ...options,
  headers: { ...options?.headers, authorization: `Bearer ${token}` },
})
const enc = encodeURIComponent

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
  constructor(readonly hubUrl: string) {}

  /** Creates a handoff; pass `idempotencyKey` to make a retry answer the first result. */
  create(
    input: CreateHandoffInput,
    options?: CallOptions & { idempotencyKey?: string },
  ): Promise<CreatedHandoffView> {
    const headers = { ...options?.headers }
    if (options?.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey
    return callJson(this.hubUrl, 'POST', base, input, { ...options, headers })
  }

  /** Reads a handoff with either token. */
  read(id: string, token: string, options?: CallOptions): Promise<HandoffView> {
    return callJson(this.hubUrl, 'GET', `${base}/${enc(id)}`, undefined, auth(token, options))
  }

  /** Moves a handoff to `state` only from exactly `input.from`. */
  advance(
    id: string,
    state: string,
    input: AdvanceInput,
    token: string,
    options?: CallOptions,
  ): Promise<MoveResultView> {
    return callJson(
      this.hubUrl,
      'POST',
      `${base}/${enc(id)}/${enc(state)}`,
      input,
      auth(token, options),
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
    const q = version === undefined ? '' : `?version=${version}`
    return callJson(
      this.hubUrl,
      'GET',
      `${base}/${enc(id)}/wait/${seconds}${q}`,
      undefined,
      auth(token, options),
    )
  }
}
