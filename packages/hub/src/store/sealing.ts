import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import path from 'node:path'
import { BatonError } from '@baton/protocol'
import type { Logger } from 'pino'

/** What a sealed key is kept for; each purpose derives its own AES key from the KEK. */
export type SealPurpose = 'hub key' | 'transfer token key'

// The stored form names the key-encryption key it was sealed under: `v1` the secret of
// BATON_HUB_KEY_SECRET, `f1` the KEK file beside the SQLite database.
const SECRET_PREFIX = 'sealed:v1:'
const FILE_PREFIX = 'sealed:f1:'

/** The name of the key-encryption key file in the data directory. */
export const KEK_FILE = 'hub.kek'

/**
 * Seals the hub's own secrets (its Ed25519 private key, the transfer token HMAC keys) before they
 * are stored, with AES-256-GCM under a key-encryption key kept outside the database: so neither a
 * copy of the database nor a read of its rows yields a key that signs for the hub.
 */
export class KeySealer {
  private constructor(
    private readonly secret: Buffer | undefined,
    private readonly file: Buffer | undefined,
  ) {}

  /**
   * The sealer for a configuration. With BATON_HUB_KEY_SECRET, that secret; else, for the SQLite
   * default, `hub.kek` in the data directory (0600, created on first start). PostgreSQL without
   * the secret has nowhere outside the database to keep a KEK, so the hub refuses to start.
   */
  static load(opts: {
    hubKeySecret?: string | undefined
    databaseUrl?: string | undefined
    dataDir: string
    log?: Logger | undefined
  }): KeySealer {
    const secret = opts.hubKeySecret ? Buffer.from(opts.hubKeySecret, 'utf8') : undefined
    if (opts.databaseUrl) {
      if (!secret) {
        throw new BatonError(
          'hub_key_secret_required',
          'PostgreSQL keeps no key-encryption key beside the database: BATON_HUB_KEY_SECRET is required',
        )
      }
      return new KeySealer(secret, undefined)
    }
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 })
    // A KEK file left from before a secret was configured still opens what it sealed.
    const file = secret ? readKekFile(opts.dataDir, opts.log) : loadKekFile(opts.dataDir, opts.log)
    return new KeySealer(secret, file)
  }

  /** The stored form of `plain`, sealed under the preferred KEK (the secret when configured). */
  seal(purpose: SealPurpose, plain: string): string {
    const [prefix, kek] = this.secret
      ? [SECRET_PREFIX, this.secret]
      : [FILE_PREFIX, this.file as Buffer]
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', derive(kek, purpose), iv)
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return prefix + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
  }

  /** Whether `stored` is sealed under the preferred KEK; anything else is sealed again at start. */
  isCurrent(stored: string): boolean {
    return stored.startsWith(this.secret ? SECRET_PREFIX : FILE_PREFIX)
  }

  /**
   * The plain text of a stored value. A value stored in the clear by an older hub passes through
   * (and `isCurrent` is false for it, so the caller seals it).
   */
  unseal(purpose: SealPurpose, stored: string): string {
    let kek: Buffer | undefined
    let blob: string
    if (stored.startsWith(SECRET_PREFIX)) {
      kek = this.secret
      blob = stored.slice(SECRET_PREFIX.length)
      if (!kek) {
        throw new Error(
          `The ${purpose} is sealed: start the hub with the same BATON_HUB_KEY_SECRET`,
        )
      }
    } else if (stored.startsWith(FILE_PREFIX)) {
      kek = this.file
      blob = stored.slice(FILE_PREFIX.length)
      if (!kek) {
        throw new Error(
          `The ${purpose} is sealed under the ${KEK_FILE} file beside the database, which is missing`,
        )
      }
    } else {
      return stored
    }
    const bytes = Buffer.from(blob, 'base64url')
    try {
      const decipher = createDecipheriv('aes-256-gcm', derive(kek, purpose), bytes.subarray(0, 12))
      decipher.setAuthTag(bytes.subarray(12, 28))
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      throw new Error(
        `The ${purpose} cannot be unsealed: BATON_HUB_KEY_SECRET (or ${KEK_FILE}) is not the one it was sealed with`,
      )
    }
  }
}

// The hub key's derivation is the one it was first sealed with, so keys sealed by earlier
// versions under BATON_HUB_KEY_SECRET still open.
function derive(kek: Buffer, purpose: SealPurpose): Buffer {
  const salt = purpose === 'hub key' ? 'baton hub key' : 'baton transfer token key'
  return Buffer.from(hkdfSync('sha256', kek, salt, 'seal v1', 32))
}

function readKekFile(dataDir: string, log?: Logger): Buffer | undefined {
  const file = path.join(dataDir, KEK_FILE)
  try {
    const mode = statSync(file).mode & 0o777
    if (mode !== 0o600) {
      chmodSync(file, 0o600)
      log?.warn({ file, mode: mode.toString(8) }, 'tightened the key-encryption key file to 0600')
    }
    const kek = readFileSync(file)
    if (kek.length !== 32) throw new Error(`${KEK_FILE} does not hold a 32-byte key`)
    return kek
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * The KEK file's key, creating it on the first start. It is written whole under another name and
 * linked into place, so instances starting together on one data directory all read one key.
 */
function loadKekFile(dataDir: string, log?: Logger): Buffer {
  const existing = readKekFile(dataDir, log)
  if (existing) return existing
  const final = path.join(dataDir, KEK_FILE)
  const temp = `${final}.${randomBytes(6).toString('hex')}`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, randomBytes(32))
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, final)
    log?.info({ file: final }, 'created the key-encryption key file')
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temp)
  }
  return readKekFile(dataDir, log) as Buffer
}
