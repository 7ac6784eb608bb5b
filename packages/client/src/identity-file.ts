import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { open, readFile, stat } from 'node:fs/promises'
import type { IdentityFile, PrivateJwk, PublicJwk } from '@baton/protocol'
import { BatonError, principalOf, readIdentityFile } from '@baton/protocol/primitives'

/** A KeyObject for the Ed25519 public key of raw bytes. */
export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  })
}

/** An agent's identity in memory: its principal, keys and the hub it was made for. */
export interface Identity {
  principal: string
  hub: string
  publicKey: KeyObject
  privateKey: KeyObject
  publicKeyJwk: PublicJwk
  privateKeyJwk: PrivateJwk
  createdAt: string
  /** The display label the agent means to give itself, if one was chosen. */
  name?: string | undefined
}

/** The identity file's JSON form of an identity. */
export function toIdentityFile(identity: Identity): IdentityFile {
  return {
    principal: identity.principal,
    hub: identity.hub,
    publicKeyJwk: identity.publicKeyJwk,
    privateKeyJwk: identity.privateKeyJwk,
    createdAt: identity.createdAt,
    ...(identity.name === undefined ? {} : { name: identity.name }),
  }
}

/** Rebuilds an identity from its file form, checking that the principal matches the keys. */
export function fromIdentityFile(value: unknown): Identity {
  const file = readIdentityFile(value)
  if (!file) {
    throw new BatonError(
      'identity_file_invalid',
      'The identity file does not have the expected shape',
    )
  }
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey({ key: file.privateKeyJwk, format: 'jwk' })
  } catch {
    throw new BatonError('identity_file_invalid', 'The identity file holds no usable Ed25519 key')
  }
  const publicKey = createPublicKey(privateKey)
  const x = (publicKey.export({ format: 'jwk' }) as PublicJwk).x
  if (x !== file.publicKeyJwk.x || x !== file.privateKeyJwk.x) {
    throw new BatonError(
      'identity_file_invalid',
      'The public key does not belong to the private key',
    )
  }
  if (principalOf(Buffer.from(x, 'base64url')) !== file.principal) {
    throw new BatonError('identity_file_invalid', 'The principal does not match the key')
  }
  return { ...file, publicKey, privateKey }
}

/**
 * Writes an identity file readable by its owner only (mode 0600); never overwrites a file.
 *
 * @example await saveIdentity('agent.identity.json', createIdentity(discoveryUrl))
 */
export async function saveIdentity(path: string, identity: Identity): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(path, 'wx', 0o600)
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST') {
      throw new BatonError(
        'identity_file_exists',
        `${path} already exists; it is never overwritten`,
      )
    }
    throw error
  }
  try {
    await handle.writeFile(`${JSON.stringify(toIdentityFile(identity), null, 2)}\n`)
    // The umask may have narrowed the mode but never widened it; make it exactly 0600.
    await handle.chmod(0o600)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Reads an identity file, refusing one that group or others may read or write
 * (`identity_file_insecure`), as ssh does for private keys.
 */
export async function loadIdentity(path: string): Promise<Identity> {
  const info = await stat(path)
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new BatonError(
      'identity_file_insecure',
      `${path} has mode ${(info.mode & 0o777).toString(8)}; an identity file must be 600`,
      { mode: (info.mode & 0o777).toString(8) },
    )
  }
  let json: unknown
  try {
    json = JSON.parse(await readFile(path, 'utf8'))
  } catch {
    throw new BatonError('identity_file_invalid', `${path} is not valid JSON`)
  }
  return fromIdentityFile(json)
}
