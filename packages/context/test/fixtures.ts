// Shared test fixtures: deterministic Ed25519 keys from labels, agents, and chains of offers.
import { createHash, createPrivateKey, createPublicKey, type JsonWebKey } from 'node:crypto'
import {
  createSigner,
  type Handoff,
  type Signer,
  type SignOfferInput,
  signOffer,
  toHandoff,
} from '../src/index.js'

/** A deterministic Ed25519 key pair derived from a label (test use only). */
export function keyFromLabel(label: string): { privateJwk: JsonWebKey; publicJwk: JsonWebKey } {
  const seed = createHash('sha256').update(`baton-test-key:${label}`).digest()
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed])
  const key = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
  return {
    privateJwk: key.export({ format: 'jwk' }),
    publicJwk: createPublicKey(key).export({ format: 'jwk' }),
  }
}

/** A test agent: identifier, signer and public JWK. */
export interface Agent {
  id: string
  signer: Signer
  publicJwk: JsonWebKey
}

/** Builds agents with deterministic keys for the given identifiers. */
export async function agents(ids: readonly string[]): Promise<Agent[]> {
  return Promise.all(
    ids.map(async (id) => {
      const k = keyFromLabel(id)
      return {
        id,
        signer: await createSigner({ iss: id, key: k.privateJwk }),
        publicJwk: k.publicJwk,
      }
    }),
  )
}

/** The trust configuration binding each agent's identifier to its public key. */
export function trustOf(list: readonly Agent[]): Record<string, JsonWebKey> {
  return Object.fromEntries(list.map((a) => [a.id, a.publicJwk]))
}

/** A deterministic hop identifier from a label. */
export function hopOf(label: string): string {
  return createHash('sha256').update(`hop:${label}`).digest().subarray(0, 16).toString('base64url')
}

/** The base time of test chains, NumericDate seconds. */
export const T0 = 1_793_000_000

/**
 * Builds a handoff through `path` (agent i offers to agent i+1; the last offers to `receiver`),
 * carrying the chain; each hop issued one second after the previous.
 */
export function buildChain(
  path: readonly Agent[],
  receiver: string,
  extra: Partial<Omit<SignOfferInput, 'signer' | 'aud' | 'prev'>> = {},
): Handoff {
  let h: Handoff | undefined
  path.forEach((a, i) => {
    const offer = signOffer({
      dialog: 'ctx-7c1e',
      ...extra,
      signer: a.signer,
      aud: i === path.length - 1 ? receiver : path[i + 1]!.id,
      iat: (extra.iat ?? T0) + i,
      hop: hopOf(`${a.id}:${i}:${extra.task ?? ''}`),
      ...(h === undefined ? {} : { prev: h.offer }),
    })
    h = toHandoff(offer, h === undefined ? {} : { after: h, chain: true })
  })
  return h!
}

/** A clock fixed at NumericDate seconds `s`, in milliseconds. */
export function clockAt(s: number): () => number {
  return () => s * 1000
}
