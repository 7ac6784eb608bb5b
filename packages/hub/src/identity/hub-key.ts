import { createPublicKey, type KeyObject } from 'node:crypto'
import type { IdentityService } from './service.js'

/** The hub's own Ed25519 signing key with the `kid` discovery publishes for it. */
export interface HubSigner {
  kid: string
  privateKey: KeyObject
}

/**
 * Loads the hub's signing key for receipts, checking that it is the key discovery publishes, so a
 * receipt always verifies with the `hubKey` clients read from `/.well-known/agent-net`.
 */
export async function loadHubSigner(identity: IdentityService): Promise<HubSigner> {
  const privateKey = await identity.hubPrivateKey()
  const published = identity.discovery('http://hub.invalid').hubKey
  const x = (createPublicKey(privateKey).export({ format: 'jwk' }) as { x?: string }).x
  if (x !== published.x) throw new Error('The hub private key does not match its published key')
  return { kid: published.kid, privateKey }
}
