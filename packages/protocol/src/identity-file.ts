// An identity file's shape, checked without schemas so that loading a key loads no zod. The
// `IdentityFile` schema (identity.ts) publishes the same rules from the same patterns, and a
// property test holds the two to the same answers.
import type { IdentityFile, PrivateJwk, PublicJwk } from './identity.js'

/** An Ed25519 key member of a JWK (`x` or `d`, RFC 8037): 32 bytes as unpadded base64url. */
export const JWK_KEY_MEMBER = /^[A-Za-z0-9_-]{43}$/

/**
 * An agent's display label: no control, format or line-separator characters, and no space at
 * either end; 1 to {@link AGENT_LABEL_MAX_CHARS} UTF-16 code units long.
 */
export const AGENT_LABEL_PATTERN = /^[^\p{C}\p{Z}](?:[^\p{C}\p{Zl}\p{Zp}]*[^\p{C}\p{Z}])?$/u

/** The longest display label, in UTF-16 code units. */
export const AGENT_LABEL_MAX_CHARS = 64

/** Whether `value` is a display label an agent may give itself. */
export function isAgentLabel(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= AGENT_LABEL_MAX_CHARS &&
    AGENT_LABEL_PATTERN.test(value)
  )
}

type Members = Record<string, unknown>

const isMembers = (value: unknown): value is Members =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function publicJwkOf(value: unknown): PublicJwk | undefined {
  if (!isMembers(value)) return undefined
  const { kty, crv, x } = value
  if (kty !== 'OKP' || crv !== 'Ed25519' || typeof x !== 'string' || !JWK_KEY_MEMBER.test(x)) {
    return undefined
  }
  const jwk: PublicJwk = { kty, crv, x }
  for (const name of ['kid', 'alg', 'use'] as const) {
    // An optional member given, even as undefined, is kept, as the schema keeps it.
    if (!(name in value)) continue
    const member = value[name]
    if (member !== undefined && typeof member !== 'string') return undefined
    jwk[name] = member
  }
  return jwk
}

function privateJwkOf(value: unknown): PrivateJwk | undefined {
  const jwk = publicJwkOf(value)
  const d = (value as Members | undefined)?.d
  if (!jwk || typeof d !== 'string' || !JWK_KEY_MEMBER.test(d)) return undefined
  return { ...jwk, d }
}

/**
 * The identity file `value` holds, with only the members `IdentityFile` names, or undefined when
 * it does not have that shape. It checks the shape only; that the keys are one pair and name the
 * principal is the loader's check.
 *
 * @example const file = readIdentityFile(JSON.parse(text)) // undefined for a file of another shape
 */
export function readIdentityFile(value: unknown): IdentityFile | undefined {
  if (!isMembers(value)) return undefined
  const { principal, hub, publicKeyJwk, privateKeyJwk, createdAt, name } = value
  if (typeof principal !== 'string' || !principal.startsWith('did:key:z')) return undefined
  if (typeof hub !== 'string' || typeof createdAt !== 'string') return undefined
  if (name !== undefined && !isAgentLabel(name)) return undefined
  const publicJwk = publicJwkOf(publicKeyJwk)
  const privateJwk = privateJwkOf(privateKeyJwk)
  if (!publicJwk || !privateJwk) return undefined
  return {
    principal,
    hub,
    publicKeyJwk: publicJwk,
    privateKeyJwk: privateJwk,
    createdAt,
    ...('name' in value ? { name: name as string | undefined } : {}),
  }
}
