import { createPrivateKey, createPublicKey } from 'node:crypto'
import { generateKeyPair } from '@baton/context'
import { type PrivateJwk, type PublicJwk, principalOf } from '@baton/protocol'
import type { Identity } from './identity-file.js'

// did:key and base58btc live in @baton/protocol; the SDK keeps exporting them.
export {
  base58btcDecode,
  base58btcEncode,
  principalOf,
  publicKeyOfPrincipal,
} from '@baton/protocol'
// Reading and writing identity files loads no schemas: the CLI reads one on every command.
export {
  fromIdentityFile,
  type Identity,
  loadIdentity,
  publicKeyFromRaw,
  saveIdentity,
  toIdentityFile,
} from './identity-file.js'

/**
 * Makes a new Ed25519 identity for a hub (named by its discovery URL), with the display label
 * `name` the agent means to set once it is enrolled, if given.
 */
export function createIdentity(hub: string, now: Date = new Date(), name?: string): Identity {
  const privateKeyJwk = generateKeyPair('EdDSA').privateJwk as PrivateJwk
  const privateKey = createPrivateKey({ key: privateKeyJwk, format: 'jwk' })
  const publicKey = createPublicKey(privateKey)
  const publicKeyJwk: PublicJwk = { kty: 'OKP', crv: 'Ed25519', x: privateKeyJwk.x }
  return {
    principal: principalOf(Buffer.from(publicKeyJwk.x, 'base64url')),
    hub,
    publicKey,
    privateKey,
    publicKeyJwk,
    privateKeyJwk: { kty: 'OKP', crv: 'Ed25519', x: privateKeyJwk.x, d: privateKeyJwk.d },
    createdAt: now.toISOString(),
    ...(name === undefined ? {} : { name }),
  }
}
