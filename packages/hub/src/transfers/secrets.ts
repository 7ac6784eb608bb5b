import { BatonError, CredRef } from '@baton/protocol'

/**
 * Raw-secret detection for snapshots (seed 004: credentials only as vault references, never raw
 * secrets). Every string value anywhere in the snapshot is checked against common secret shapes,
 * and a value under a key named like a secret must be a credential reference instead.
 */
const SHAPES: [kind: string, pattern: RegExp][] = [
  ['private_key', /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/],
  ['aws_access_key_id', /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/],
  ['github_token', /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/],
  ['slack_token', /\bxox[abposr]-[A-Za-z0-9-]{10,}/],
  ['api_key', /\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}/],
  ['google_api_key', /\bAIza[0-9A-Za-z_-]{35}/],
  ['stripe_key', /\b[rs]k_live_[0-9A-Za-z]{16,}/],
  ['jwt', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/],
  ['bearer_credential', /\bBearer\s+[A-Za-z0-9._~+/-]{20,}/],
  ['url_with_password', /\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i],
]

const SECRET_NAMES =
  /^(?:password|passwd|passphrase|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key|authorization|x-api-key)$/i

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/

function child(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`
  return IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}

function refuse(path: string, kind: string): never {
  throw new BatonError(
    'snapshot_contains_secret',
    `The snapshot holds what looks like a raw secret (${kind}) at ${path}`,
    { path, kind },
  )
}

/**
 * Throws `snapshot_contains_secret` (naming the JSON path and the kind, never the value) or
 * `snapshot_invalid` for a malformed `credRef`; answers nothing when the snapshot is clean.
 */
export function assertNoSecrets(value: unknown, path = '$'): void {
  if (typeof value === 'string') {
    for (const [kind, pattern] of SHAPES) if (pattern.test(value)) refuse(path, kind)
    return
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      assertNoSecrets(v, child(path, i))
    })
    return
  }
  if (value === null || typeof value !== 'object') return
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const at = child(path, key)
    if (key === 'credRef') {
      if (typeof v !== 'string' || !CredRef.safeParse(v).success) {
        throw new BatonError(
          'snapshot_invalid',
          `credRef at ${at} must be vault://<path>[#field] or env://<NAME>`,
          { field: at },
        )
      }
      continue
    }
    if (SECRET_NAMES.test(key) && typeof v === 'string' && v !== '') refuse(at, 'named_secret')
    assertNoSecrets(v, at)
  }
}
