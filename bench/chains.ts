// Signed delegation chains for the benches that check them (not a scenario: it exports no run).
import {
  type Handoff,
  type Signer,
  type SignOfferInput,
  signOffer,
  toHandoff,
} from '@baton/context'

/** One hop of a chain: who signs it and to whom. */
export interface ChainHop {
  readonly signer: Signer
  readonly aud: string
}

/**
 * A Handoff carrying a chain of offers, hop i signed by `hops[i].signer` to `hops[i].aud`, each
 * naming the one before as its `prev`; the last hop's offer is the current one. `members(i)`
 * gives the rest of hop i's signed members (dialog, lifetime, issue time, ...).
 */
export function signChain(
  hops: readonly ChainHop[],
  members: (i: number) => Omit<SignOfferInput, 'signer' | 'aud' | 'prev'>,
): Handoff {
  let handoff: Handoff | undefined
  for (const [i, { signer, aud }] of hops.entries()) {
    const offer = signOffer({
      ...members(i),
      signer,
      aud,
      ...(handoff === undefined ? {} : { prev: handoff.offer }),
    })
    handoff = toHandoff(offer, handoff === undefined ? {} : { after: handoff, chain: true })
  }
  if (handoff === undefined) throw new Error('a chain has at least one hop')
  return handoff
}
