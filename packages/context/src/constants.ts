// Every wire choice and default of the signed handoff context lives here, in one place, so it can
// be corrected against the text of draft-srivastava-agentproto-handoff-context-01 when that text
// is at hand. Each constant says whether the seed mandates it or where the seed is silent and the
// value is Baton's choice (marked "choice").

/** The version member every offer and status carries. */
// seed 003: the version is v: 1
export const VERSION = 1

/** The payload `typ` member of an offer. */
// seed 003: the type is "offer"
export const OFFER_TYPE = 'offer'

/** The payload `typ` member of a status. */
// seed 003: the type is "status"
export const STATUS_TYPE = 'status'

/** The JWS protected-header `typ` of an offer; the payload `typ` must agree with it. */
// choice: the seed names no media type; explicit typing per RFC 8725 section 3.11
export const OFFER_JWS_TYP = 'handoff-offer+jwt'

/** The JWS protected-header `typ` of a status; the payload `typ` must agree with it. */
// choice: as for OFFER_JWS_TYP
export const STATUS_JWS_TYP = 'handoff-status+jwt'

/** The signature algorithms accepted; `none`, HMAC and anything else are refused. */
// choice: the seed names ES256 as an example of a randomized algorithm; Ed25519 is the house key
export const ALGORITHMS = ['EdDSA', 'ES256'] as const

/** COSE algorithm identifiers (RFC 9053) for the accepted algorithms. */
// choice: COSE_Sign1 carries the same two algorithms as the JSON form
export const COSE_ALGORITHMS = { EdDSA: -8, ES256: -7 } as const

/** CBOR tag of a COSE_Sign1 message (RFC 9052). */
// seed 003: the CBOR handoff digest is over the encoded tagged COSE_Sign1 message
export const COSE_SIGN1_TAG = 18

/** COSE header labels used in the protected header: alg and kid (RFC 9052). */
// choice: alg and kid are protected; the unprotected header is empty and ignored if not
export const COSE_HEADER = { alg: 1, kid: 4 } as const

/** The pattern of a hop identifier: 22 to 64 base64url characters. */
// seed 003: the hop matches 22 to 64 base64url characters without padding
export const HOP_PATTERN = /^[A-Za-z0-9_-]{22,64}$/

/** Random octets in a hop identifier minted by this library (16 octets = 128 bits). */
// seed 003: a hop carries at least 128 bits from a cryptographically secure random source
export const HOP_OCTETS = 16

/** The pattern of a handoff digest (and of `grant` and a ref's digest): SHA-256, base64url. */
// choice: SHA-256 is mandated by the seed; its encoding (43 base64url characters, no padding) is not
export const DIGEST_PATTERN = /^[A-Za-z0-9_-]{43}$/

/** Allowed clock skew, in milliseconds. */
// seed 003: a skew of no more than 60 seconds is recommended
export const DEFAULT_SKEW_MS = 60_000

/** Maximum offer lifetime (exp - iat), in milliseconds. */
// seed 003: a maximum lifetime of 300 seconds is recommended for interactive use
export const DEFAULT_MAX_LIFETIME_MS = 300_000

/** Default lifetime of an offer minted by this library, in seconds. */
// choice: the seed's own example uses a 120-second window
export const DEFAULT_OFFER_TTL_S = 120

/** Maximum chain length, counting the current offer: at most 16 offers and 15 prev links. */
// seed 003: receivers must enforce a maximum chain length, 16 recommended
export const DEFAULT_MAX_CHAIN_LENGTH = 16

/** Largest signed element accepted, in octets. */
// seed 003: receivers must bound element size; choice: 16 KiB (the seed's example offer is 942)
export const DEFAULT_MAX_ELEMENT_OCTETS = 16_384

/** Smallest salt of a salted-digest ref, in octets. */
// seed 003: the salt is at least 16 octets from a secure random source
export const MIN_SALT_OCTETS = 16

/** The status states. */
// seed 003: the five states
export const STATES = ['accepted', 'rejected', 'completed', 'failed', 'canceled'] as const

/** The states that may carry `reason` and `detail`. */
// seed 003: an optional reason and free-text detail on rejections and failures
export const STATES_WITH_REASON = ['rejected', 'failed'] as const

/** The states that may carry `refs`. */
// seed 003: a `failed` after partial effect lists in refs what took effect; choice: `completed`
// may name its results the same way; other states carry none
export const STATES_WITH_REFS = ['completed', 'failed'] as const

/** The fixed reason vocabulary. */
// seed 003: the reason vocabulary for the common failures
export const REASONS = [
  'bad-signature',
  'untrusted-key',
  'wrong-audience',
  'stale',
  'replay',
  'equivocation',
  'broken-chain',
  'cycle',
  'too-deep',
  'unverifiable-ref',
  'ref-mismatch',
  'policy',
] as const

/**
 * Every reason a check answers: the seed's vocabulary, then `malformed` for a signed element whose
 * members are not well-formed. A status carries only the seed's reasons (or an absolute URI).
 */
// choice: the seed's vocabulary has no code for an element that is validly signed yet malformed
// (a hop of 5 characters, v 2); `bad-signature` would say the signature failed when it did not
export const CHECK_REASONS = [...REASONS, 'malformed'] as const

/** Rejection reasons that are not terminal and never set a hop's state. */
// seed 003: a "rejected" with reason "stale" or "replay" is not terminal
export const NONTERMINAL_REASONS = ['stale', 'replay'] as const

/** The reference kinds defined by the seed; any other kind is an absolute URI. */
// seed 003: "digest", "salted-digest", "scitt-receipt", "learnlog-head", or an absolute URI
export const REF_KINDS = ['digest', 'salted-digest', 'scitt-receipt', 'learnlog-head'] as const

/** The outcomes of checking one reference. */
// seed 003: verified, mismatch, unverifiable or not checked
export const REF_OUTCOMES = ['verified', 'mismatch', 'unverifiable', 'not-checked'] as const

/** The A2A extension URI and the MCP `_meta` key that carry handoff objects (seed 003). */
export { A2A_EXTENSION_URI, MCP_META_KEY } from '@baton/protocol'

/**
 * The handoff-state to A2A task-state map, in the A2A v1.0 JSON names.
 */
// seed 003: handoff states map to the nearest A2A task states; choice: the seed's table did not
// survive into the seed text, so the nearest states are chosen by name (accepted -> WORKING)
export const A2A_TASK_STATE = {
  accepted: 'TASK_STATE_WORKING',
  rejected: 'TASK_STATE_REJECTED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
} as const

/** Retention of a hop that is still open (work taken, no terminal status), in milliseconds. */
// choice: an open hop must answer retransmissions until it ends, so it is kept for 30 days
export const OPEN_HOP_RETENTION_MS = 30 * 24 * 3600_000

/** Retention of an answered hop after exp plus skew, in milliseconds. */
// seed 003: should keep answered hops in storage that survives a restart; choice: one day
export const ANSWERED_HOP_RETENTION_MS = 24 * 3600_000

/** First wait before retransmitting an unanswered offer, in milliseconds. */
// seed 003: a delegator should wait longer after each attempt; choice: doubling from one second
export const RETRANSMIT_BASE_MS = 1_000

/** Longest wait between retransmissions, in milliseconds. */
// choice: the doubling stops at one minute
export const RETRANSMIT_CAP_MS = 60_000

// Reason codes where the seed is silent (choices, in one place):
// - A structurally malformed element (not three canonical base64url parts, header or payload not
//   a JSON object, alg off the allow-list, crit present, kid or typ missing, payload members
//   missing or ill-formed, COSE not deterministically encoded) is `bad-signature`: the seed treats
//   an unsigned or undecodable element as absent. A Handoff object that is not `{ offer, chain? }`
//   is `bad-signature` for the same reason.
// - An element whose signature verifies against a trusted key but whose payload members are not
//   those of a well-formed element of its kind (a hop outside 22 to 64 base64url characters, v
//   other than 1, a member missing or of the wrong type) is `malformed`: the signature is good, so
//   `bad-signature` would mislead. Its check is still `signature` (check 1 opens the element).
// - No trusted key for (iss, kid, alg) is `untrusted-key`; a trusted key whose signature fails is
//   `bad-signature`. Keys come only from the trust configuration, never from jwk/jku/x5u/x5c.
// - exp <= iat, iat beyond now + skew, now >= exp + skew, and exp - iat above the receiver's
//   maximum lifetime are `stale`: the seed puts the maximum lifetime inside the freshness check.
//   `policy` is kept for the deployment's own rules (dialog, full chain, trusted origins, size
//   bound, the caller's hook).
// - A dialog mismatch (against the receiver's expected dialog(s) or predicate) is `policy`.
// - A chain element with a bad signature or untrusted key answers `bad-signature` or
//   `untrusted-key` with its index; a timing violation between links is `broken-chain`.
// - Within the chain check: length first (`too-deep`, before any signature work), then element
//   signatures, then cycles, then prev, continuity and timing per link. Cycles before links makes
//   a duplicated hop `cycle`, while a dropped or reordered hop is `broken-chain`.
// - A partial chain is reported (partial: true) and refused only when the receiver requires a full
//   chain or names trusted origins: then `policy`.
// - An element over the size bound is `policy`.
// - A required ref that cannot be checked is `unverifiable-ref`; any checked ref that does not
//   match is `ref-mismatch`, required or not.
// - A caller's policy hook runs after the seven checks; false is `policy`.
// - A status that does not answer the given offer (digest, hop or parties) is `policy`.
