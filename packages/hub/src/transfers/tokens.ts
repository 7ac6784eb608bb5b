import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { BatonError, type TransferTokenScope } from '@baton/protocol'
import type { Database } from '../store/database.js'
import type { KeySealer } from '../store/sealing.js'

/**
 * Transfer tokens (seed 004): `v1.<kid>.<base64url(payload JSON)>.<base64url(HMAC-SHA256)>`, the
 * MAC over `v1.<kid>.<payload>`. Bound to one transfer, one scope and the parameters it
 * authorizes; single use is enforced by the service, in the transaction of the move.
 */

/** What a transfer token says. `exp` is in epoch seconds. */
export interface TokenPayload {
  tid: string
  scope: TransferTokenScope
  tier?: string
  budgetMicros?: number
  rateMicrosPerSecond?: number
  exp: number
  jti: string
}

/** One HMAC key; the first key of a ring signs, every key verifies (rotation). */
export interface TokenKey {
  kid: string
  secret: Buffer
}

/** The hub's transfer token keys. */
export class TokenKeyring {
  private readonly byKid: Map<string, Buffer>

  constructor(readonly keys: TokenKey[]) {
    if (keys.length === 0) throw new Error('a transfer token keyring needs at least one key')
    this.byKid = new Map(keys.map((k) => [k.kid, k.secret]))
  }

  /** The signing key. */
  get current(): TokenKey {
    return this.keys[0]!
  }

  secretOf(kid: string): Buffer | undefined {
    return this.byKid.get(kid)
  }

  /**
   * The keys from config, or else the keys kept in the database, generating the first one there
   * (so every hub instance on the same database shares it). Kept keys are sealed at rest; one an
   * older hub stored in the clear is sealed now, keeping its kid and secret.
   */
  static async load(
    database: Database,
    configured: { kid: string; secret: string }[] | undefined,
    now: number,
    sealer: KeySealer,
  ): Promise<TokenKeyring> {
    if (configured) {
      return new TokenKeyring(
        configured.map((k) => ({ kid: k.kid, secret: Buffer.from(k.secret, 'utf8') })),
      )
    }
    const read = () =>
      database.db
        .selectFrom('transfer_token_keys')
        .selectAll()
        .orderBy('created_at', 'asc')
        .orderBy('kid', 'asc')
        .execute()
    let rows = await read()
    if (rows.length === 0) {
      try {
        await database.db
          .insertInto('transfer_token_keys')
          .values({
            // A fixed id: instances starting together collide on it and all keep the winner's key.
            kid: 'db1',
            secret: sealer.seal(PURPOSE, randomBytes(32).toString('base64url')),
            created_at: now,
          })
          .execute()
      } catch (error) {
        if (!database.caps.isUniqueViolation(error)) throw error
      }
      rows = await read()
    }
    const keys: TokenKey[] = []
    for (const row of rows) {
      const secret = sealer.unseal(PURPOSE, row.secret)
      if (!sealer.isCurrent(row.secret)) {
        // Compare-and-set on the stored form: instances starting together seal it once.
        await database.db
          .updateTable('transfer_token_keys')
          .set({ secret: sealer.seal(PURPOSE, secret) })
          .where('kid', '=', row.kid)
          .where('secret', '=', row.secret)
          .execute()
      }
      keys.push({ kid: row.kid, secret: Buffer.from(secret, 'utf8') })
    }
    return new TokenKeyring(keys)
  }
}

const PURPOSE = 'transfer token key'

const mac = (secret: Buffer, signed: string) =>
  createHmac('sha256', secret).update(signed, 'ascii').digest()

/** A fresh token id. */
export function newJti(): string {
  return randomBytes(16).toString('base64url')
}

/** Mints a token with the ring's current key. */
export function mintToken(ring: TokenKeyring, payload: TokenPayload): string {
  const { kid, secret } = ring.current
  const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')
  const signed = `v1.${kid}.${body}`
  return `${signed}.${mac(secret, signed).toString('base64url')}`
}

const B64U = /^[A-Za-z0-9_-]+$/

function malformed(why: string): BatonError {
  return new BatonError('transfer_token_malformed', `The transfer token is malformed: ${why}`)
}

/** What a move expects of its token. */
export interface TokenExpectation {
  transferId: string
  scope: TransferTokenScope
  /** Epoch milliseconds. */
  now: number
  /** For provision: the exact values the request asks for. */
  params?: { tier: string; budgetMicros: number; rateMicrosPerSecond: number }
}

/**
 * Checks a token in a fixed order, each defect with its own code: form, key id, MAC (compared in
 * constant time), payload, expiry, transfer, scope, parameters. Single use is checked later.
 */
export function verifyToken(
  ring: TokenKeyring,
  token: string,
  expect: TokenExpectation,
): TokenPayload {
  const parts = token.split('.')
  if (parts.length !== 4 || parts[0] !== 'v1') throw malformed('not v1.<kid>.<payload>.<mac>')
  const [, kid, body, sig] = parts as [string, string, string, string]
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(kid) || !B64U.test(body) || !B64U.test(sig)) {
    throw malformed('a part is not base64url')
  }
  const secret = ring.secretOf(kid)
  if (!secret) {
    throw new BatonError('transfer_token_unknown_key', `No transfer token key ${kid} on this hub`, {
      kid,
    })
  }
  const expected = mac(secret, `v1.${kid}.${body}`)
  const given = Buffer.from(sig, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new BatonError('transfer_token_bad_signature', 'The transfer token signature is wrong')
  }
  let payload: TokenPayload
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as TokenPayload
  } catch {
    throw malformed('the payload is not JSON')
  }
  if (
    !payload ||
    typeof payload !== 'object' ||
    typeof payload.tid !== 'string' ||
    (payload.scope !== 'provision' && payload.scope !== 'activate') ||
    typeof payload.jti !== 'string' ||
    !Number.isSafeInteger(payload.exp)
  ) {
    throw malformed('the payload lacks tid, scope, exp or jti')
  }
  if (payload.exp * 1000 <= expect.now) {
    throw new BatonError('transfer_token_expired', 'The transfer token has expired', {
      expiredAt: new Date(payload.exp * 1000).toISOString(),
    })
  }
  if (payload.tid !== expect.transferId) {
    throw new BatonError(
      'transfer_token_wrong_transfer',
      'The transfer token was minted for another transfer',
    )
  }
  if (payload.scope !== expect.scope) {
    throw new BatonError(
      'transfer_token_wrong_scope',
      `The transfer token authorizes ${payload.scope}, not ${expect.scope}`,
      { tokenScope: payload.scope },
    )
  }
  if (expect.params) {
    // seed 004 fault: tokens bound no parameters; here the request must match what was minted.
    for (const field of ['tier', 'budgetMicros', 'rateMicrosPerSecond'] as const) {
      if (payload[field] !== expect.params[field]) {
        throw new BatonError(
          'transfer_token_params_mismatch',
          `The request's ${field} differs from what the token authorizes`,
          { field },
        )
      }
    }
  }
  return payload
}
