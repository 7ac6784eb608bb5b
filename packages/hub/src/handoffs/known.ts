import type { HandoffRow } from '../store/schema.js'
import { allowedNext, isFinal, type Machine } from './machine.js'
import { matchDigest, storedDigest, tokenDigest } from './tokens.js'

/**
 * What never changes about a handoff once it is created: its token hashes, expiry, machine and
 * notify URL (only state, version, ended and updated_at ever change; cleanup deletes a row only
 * after its expiry). Enough to predict, before any read, that a move will commit; the statement
 * that commits it still checks the state in the database.
 */
export interface KnownHandoff {
  /** The token digests its stored hashes encode, decoded once. */
  ownerDigest: Buffer
  receiverDigest: Buffer
  expiresAt: number
  machine: Machine
  /** The handoff has a notify_url: its moves write signals to the outbox. */
  signalled: boolean
}

/** A move the known facts of its handoff say will commit, if the handoff is still at `from`. */
export interface PredictedMove {
  actor: 'owner' | 'receiver'
  machine: Machine
  ended: boolean
}

// Bounds the memory of the known handoffs: a few hundred bytes each. A handoff forgotten is only
// moved the careful way (locked read, then write) until its next locked read remembers it.
const MAX_KNOWN = 8192

/** The immutable facts of recently created or moved handoffs, the oldest forgotten first. */
export class KnownHandoffs {
  private readonly byId = new Map<string, KnownHandoff>()
  // Most handoffs share one machine text (the seed's default): one parsed machine each.
  private readonly machines = new Map<string, Machine>()

  constructor(private readonly max = MAX_KNOWN) {}

  get size(): number {
    return this.byId.size
  }

  get(id: string): KnownHandoff | undefined {
    return this.byId.get(id)
  }

  /** Remembers a handoff from a row read or written in a transaction that committed. */
  remember(
    row: Pick<
      HandoffRow,
      'id' | 'owner_token_hash' | 'receiver_token_hash' | 'expires_at' | 'machine' | 'notify_url'
    >,
  ): void {
    if (this.byId.has(row.id)) return
    if (this.byId.size >= this.max) {
      const oldest = this.byId.keys().next()
      if (!oldest.done) this.byId.delete(oldest.value)
    }
    this.byId.set(row.id, {
      ownerDigest: storedDigest(row.owner_token_hash),
      receiverDigest: storedDigest(row.receiver_token_hash),
      expiresAt: row.expires_at,
      machine: this.machine(row.machine),
      signalled: row.notify_url !== null,
    })
  }

  forget(id: string): void {
    this.byId.delete(id)
  }

  private machine(text: string): Machine {
    let machine = this.machines.get(text)
    if (!machine) {
      machine = JSON.parse(text) as Machine
      if (this.machines.size < 64) this.machines.set(text, machine)
    }
    return machine
  }
}

/**
 * Predicts a move from what never changes about its handoff: the token holds a role, the handoff
 * has not expired, has no notify URL, and its machine allows `from -> to` (seed 002). Answers
 * nothing when any of these fails or is unknown: that move goes the careful way, which gives the
 * exact answer (an error, a repeat, a signal).
 */
export function predictMove(
  known: KnownHandoff | undefined,
  token: string,
  from: string,
  to: string,
  now: number,
): PredictedMove | undefined {
  if (!known || known.signalled || known.expiresAt <= now) return undefined
  const { machine } = known
  if (!Object.hasOwn(machine.transitions, from) || !allowedNext(machine, from).includes(to)) {
    return undefined
  }
  const actor = matchDigest(tokenDigest(token), {
    owner: known.ownerDigest,
    receiver: known.receiverDigest,
  })
  if (!actor) return undefined
  return { actor, machine, ended: isFinal(machine, to) }
}
