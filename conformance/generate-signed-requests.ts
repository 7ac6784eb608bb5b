// Writes conformance/signed-requests.json: requests signed by fixed keys at a fixed time, the
// signature base and fields each must produce, and requests a verifier must accept or refuse
// with the hub's code. Deterministic (Ed25519 signatures are), so a test regenerates it and
// compares. Run: node --import tsx conformance/generate-signed-requests.ts
import { createHash, createPrivateKey, type KeyObject } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { contentDigest, jwkThumbprint, principalOf, signMessage, signRequest } from '@baton/client'
import { defaultComponents } from '@baton/protocol'

/** The time every vector is signed at and verified at, seconds since the epoch. */
export const T = 1_796_000_000
const ORIGIN = 'https://hub.example'

interface Key {
  privateKeyJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string; d: string }
  principal: string
  thumbprint: string
}

function key(d: string, x: string): Key & { object: KeyObject } {
  const privateKeyJwk = { kty: 'OKP' as const, crv: 'Ed25519' as const, x, d }
  const object = createPrivateKey({ key: privateKeyJwk, format: 'jwk' })
  return {
    privateKeyJwk,
    principal: principalOf(Buffer.from(x, 'base64url')),
    thumbprint: jwkThumbprint(object),
    object,
  }
}

// RFC 8037 Appendix A.1's key, and RFC 9421 Appendix B.1.4's test-key-ed25519.
const KEYS = {
  alice: key(
    'nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A',
    '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
  ),
  mallory: key(
    'n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU',
    'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs',
  ),
}
type KeyName = keyof typeof KEYS

interface Request {
  method: string
  url: string
  headers: Record<string, string>
  body: string | null
}

const GET_ME: Omit<Request, 'headers'> = { method: 'GET', url: `${ORIGIN}/v1/me`, body: null }
const CREATE: Omit<Request, 'headers'> = {
  method: 'POST',
  url: `${ORIGIN}/v1/resources`,
  body: '{"namespace":"vectors","kind":"vector/v1","data":{"n":1}}',
}

/** What one vector signs: the request, the key, the profile and any parameter to change. */
interface Signing {
  key?: KeyName
  profile?: 'baton' | 'web-bot-auth'
  request: Omit<Request, 'headers'> & { headers?: Record<string, string> }
  nonce: string
  created?: number
  lifetime?: number
  /** Signs with another key than the keyid names. */
  signer?: KeyName
  keyid?: string
  components?: (string | { name: string; key: string })[]
  alg?: string | null
  tag?: string
  expires?: number
  omitNonce?: boolean
}

/** Signs as @baton/client does, or with the changed parameters a negative vector needs. */
function sign(s: Signing): { request: Request; base: string } {
  const k = KEYS[s.key ?? 'alice']
  const body = s.request.body === null ? undefined : Buffer.from(s.request.body)
  const created = s.created ?? T
  const plain =
    s.signer === undefined &&
    s.keyid === undefined &&
    s.components === undefined &&
    s.alg === undefined &&
    s.tag === undefined &&
    s.expires === undefined &&
    s.request.headers?.['content-digest'] === undefined &&
    !s.omitNonce
  if (plain) {
    const signed = signRequest({
      method: s.request.method,
      url: s.request.url,
      body,
      headers: s.request.headers ?? {},
      privateKey: k.object,
      keyid: k.principal,
      created,
      nonce: s.nonce,
      ...(s.profile ? { profile: s.profile } : {}),
      ...(s.lifetime !== undefined ? { lifetimeS: s.lifetime } : {}),
    })
    const { signature: _s, 'signature-input': _i, ...rest } = signed.headers
    const base = signMessage(
      { method: s.request.method, targetUri: s.request.url, headers: rest },
      {
        privateKey: k.object,
        keyid: s.profile === 'web-bot-auth' ? k.thumbprint : k.principal,
        components: defaultComponents(body !== undefined, rest, s.profile),
        created,
        nonce: s.nonce,
        ...(s.profile === 'web-bot-auth'
          ? { tag: 'web-bot-auth', expires: created + (s.lifetime ?? 60) }
          : {}),
      },
    ).base
    return { request: { ...s.request, headers: signed.headers }, base }
  }
  const headers: Record<string, string> = {}
  for (const [n, v] of Object.entries(s.request.headers ?? {})) headers[n.toLowerCase()] = v
  if (body) {
    headers['content-type'] ??= 'application/json'
    headers['content-digest'] ??= contentDigest(body)
  }
  const web = s.profile === 'web-bot-auth'
  const signed = signMessage(
    { method: s.request.method, targetUri: s.request.url, headers },
    {
      privateKey: KEYS[s.signer ?? s.key ?? 'alice'].object,
      keyid: s.keyid ?? (web ? k.thumbprint : k.principal),
      components: s.components ?? defaultComponents(body !== undefined, headers, s.profile),
      created,
      nonce: s.omitNonce ? null : s.nonce,
      ...(s.alg !== undefined ? { alg: s.alg } : {}),
      ...(s.tag !== undefined ? { tag: s.tag } : web ? { tag: 'web-bot-auth' } : {}),
      ...(s.expires !== undefined
        ? { expires: s.expires }
        : web
          ? { expires: created + (s.lifetime ?? 60) }
          : {}),
    },
  )
  headers['signature-input'] = signed.signatureInput
  headers.signature = signed.signature
  return { request: { ...s.request, headers }, base: signed.base }
}

/** A change made to a signed request before it is sent. */
type Mutation = (r: Request) => void
const set =
  (name: string, value: string | null): Mutation =>
  (r) => {
    if (value === null) delete r.headers[name]
    else r.headers[name] = value
  }
const edit =
  (name: string, from: string | RegExp, to: string): Mutation =>
  (r) => {
    const before = r.headers[name]!
    r.headers[name] = before.replace(from, to)
    if (r.headers[name] === before) throw new Error(`mutation of ${name} changed nothing`)
  }

type Verdict = { accept: true; principal: string } | { code: string; reason?: string }

interface Vector {
  name: string
  request: Request
  verifier?: { now?: number; seenNonces?: { key: KeyName; nonce: string }[] }
  verdict: Verdict
}

const accept = (k: KeyName = 'alice'): Verdict => ({ accept: true, principal: KEYS[k].principal })
const refuse = (code: string, reason?: string): Verdict => (reason ? { code, reason } : { code })
const WBA_AGENT = 'sig1="https://agent.example"'

const verification: Vector[] = []
let nonces = 0
/** Adds a verification vector: signed as described, then changed by `mutate`. */
function v(
  name: string,
  s: Omit<Signing, 'nonce'> & { nonce?: string },
  verdict: Verdict,
  mutate: Mutation[] = [],
  verifier?: Vector['verifier'],
) {
  const nonce = s.nonce ?? `vector-${String(++nonces).padStart(3, '0')}`
  const { request } = sign({ ...s, nonce })
  const copy: Request = { ...request, headers: { ...request.headers } }
  for (const m of mutate) m(copy)
  verification.push({ name, request: copy, ...(verifier ? { verifier } : {}), verdict })
}

// ---- accepted ----
v('GET, signed', { request: GET_ME }, accept())
v(
  'GET with a percent-encoded query',
  { request: { ...GET_ME, url: `${ORIGIN}/v1/me?x=%2F1&y=a+b` } },
  accept(),
)
v('POST with a body', { request: CREATE }, accept())
v(
  'POST with a body and an Idempotency-Key',
  { request: { ...CREATE, headers: { 'idempotency-key': 'vector-key-0001' } } },
  accept(),
)
v(
  'created 60 s before the verifier (the edge of the window)',
  { request: GET_ME, created: T - 60 },
  accept(),
)
v('alg omitted', { request: GET_ME, alg: null }, accept())
v(
  'web-bot-auth: GET with a Signature-Agent, covered whole',
  { profile: 'web-bot-auth', request: { ...GET_ME, headers: { 'signature-agent': WBA_AGENT } } },
  accept(),
)
v(
  'web-bot-auth: its Signature-Agent member for the label covered',
  {
    profile: 'web-bot-auth',
    request: { ...GET_ME, headers: { 'signature-agent': WBA_AGENT } },
    components: ['@method', '@target-uri', '@authority', { name: 'signature-agent', key: 'sig1' }],
  },
  accept(),
)
v('web-bot-auth: POST with a body', { profile: 'web-bot-auth', request: CREATE }, accept())

// ---- signature_missing ----
v('no signature fields', { request: GET_ME }, refuse('signature_missing'), [
  set('signature', null),
  set('signature-input', null),
])
v('Signature without Signature-Input', { request: GET_ME }, refuse('signature_missing'), [
  set('signature-input', null),
])
v('Signature-Input without Signature', { request: GET_ME }, refuse('signature_missing'), [
  set('signature', null),
])

// ---- signature_malformed ----
v(
  'Signature-Input not a structured field',
  { request: GET_ME },
  refuse('signature_malformed', 'syntax'),
  [edit('signature-input', ')', '')],
)
v('Signature not a byte sequence', { request: GET_ME }, refuse('signature_malformed', 'label'), [
  set('signature', 'sig1="abc"'),
])
v('Signature under another label', { request: GET_ME }, refuse('signature_malformed', 'label'), [
  edit('signature', 'sig1=', 'sig2='),
])
v(
  'two signatures, none labelled sig1',
  { request: GET_ME },
  refuse('signature_malformed', 'label'),
  [
    edit('signature-input', 'sig1=', 'sig2='),
    (r) => {
      r.headers['signature-input'] += ', sig3=("@method");created=1;keyid="k"'
    },
  ],
)
v(
  'a signature of 63 bytes',
  { request: GET_ME },
  refuse('signature_malformed', 'signature_length'),
  [
    (r) => {
      r.headers.signature = `sig1=:${Buffer.alloc(63, 7).toString('base64')}:`
    },
  ],
)
v('created missing', { request: GET_ME }, refuse('signature_malformed', 'created'), [
  edit('signature-input', /;created=\d+/, ''),
])
v('created a string', { request: GET_ME }, refuse('signature_malformed', 'created'), [
  edit('signature-input', /;created=(\d+)/, ';created="$1"'),
])
v('keyid missing', { request: GET_ME }, refuse('signature_malformed', 'keyid'), [
  edit('signature-input', /;keyid="[^"]+"/, ''),
])
v('keyid a token, not a string', { request: GET_ME }, refuse('signature_malformed', 'keyid'), [
  edit('signature-input', /;keyid="[^"]+"/, ';keyid=alice'),
])
v('nonce missing', { request: GET_ME, omitNonce: true }, refuse('signature_malformed', 'nonce'))
v(
  'nonce empty',
  { request: GET_ME, nonce: 'will-be-emptied' },
  refuse('signature_malformed', 'nonce'),
  [edit('signature-input', ';nonce="will-be-emptied"', ';nonce=""')],
)
v(
  'nonce of 129 characters',
  { request: GET_ME, nonce: 'n'.repeat(129) },
  refuse('signature_malformed', 'nonce'),
)
v(
  'alg not ed25519',
  { request: GET_ME, alg: 'rsa-pss-sha512' },
  refuse('signature_malformed', 'alg'),
)
v('expires not an integer', { request: GET_ME }, refuse('signature_malformed', 'expires'), [
  edit('signature-input', ';nonce=', ';expires="later";nonce='),
])
v(
  'a tag other than web-bot-auth',
  { request: GET_ME, tag: 'other-app' },
  refuse('signature_malformed', 'tag'),
)
v(
  '@target-uri not covered',
  { request: GET_ME, components: ['@method', '@path'] },
  refuse('signature_malformed', 'components'),
)
v(
  '@method not covered',
  { request: GET_ME, components: ['@target-uri'] },
  refuse('signature_malformed', 'components'),
)
v(
  'content-digest not covered with a body',
  { request: CREATE, components: ['@method', '@target-uri', 'content-type'] },
  refuse('signature_malformed', 'components'),
)
v(
  'content-type not covered with a body',
  { request: CREATE, components: ['@method', '@target-uri', 'content-digest'] },
  refuse('signature_malformed', 'components'),
)
v(
  'Idempotency-Key sent but not covered',
  { request: CREATE },
  refuse('signature_malformed', 'components'),
  [set('idempotency-key', 'vector-key-0002')],
)
v(
  'a body added to a request signed without one',
  { request: GET_ME },
  refuse('signature_malformed', 'components'),
  [
    (r) => {
      r.body = '{}'
      r.headers['content-type'] = 'application/json'
    },
  ],
)
v(
  'an unsupported derived component',
  { request: GET_ME },
  refuse('signature_malformed', 'component_unsupported'),
  [edit('signature-input', '"@target-uri")', '"@target-uri" "@status")')],
)
v(
  'a component with a parameter other than key',
  { request: { ...GET_ME, headers: { accept: 'application/json' } } },
  refuse('signature_malformed', 'component_unsupported'),
  [edit('signature-input', '"@target-uri")', '"@target-uri" "accept";bs)')],
)
v('a component repeated', { request: GET_ME }, refuse('signature_malformed', 'component_invalid'), [
  edit('signature-input', '"@target-uri")', '"@target-uri" "@method")'),
])
v(
  'a component name in upper case',
  { request: { ...GET_ME, headers: { accept: 'application/json' } } },
  refuse('signature_malformed', 'component_invalid'),
  [edit('signature-input', '"@target-uri")', '"@target-uri" "Accept")')],
)
v(
  'web-bot-auth without expires',
  { profile: 'web-bot-auth', request: GET_ME },
  refuse('signature_malformed', 'expires'),
  [edit('signature-input', /;expires=\d+/, '')],
)
v(
  'web-bot-auth with a did:key as keyid',
  { profile: 'web-bot-auth', request: GET_ME, keyid: KEYS.alice.principal },
  refuse('signature_malformed', 'keyid'),
)
v(
  'web-bot-auth not covering @authority',
  { profile: 'web-bot-auth', request: GET_ME, components: ['@method', '@target-uri'] },
  refuse('signature_malformed', 'components'),
)
v(
  'web-bot-auth with a Signature-Agent it does not cover',
  {
    profile: 'web-bot-auth',
    request: GET_ME,
    components: ['@method', '@target-uri', '@authority'],
  },
  refuse('signature_malformed', 'components'),
  [set('signature-agent', WBA_AGENT)],
)
v(
  "web-bot-auth covering another label's Signature-Agent member",
  {
    profile: 'web-bot-auth',
    request: {
      ...GET_ME,
      headers: { 'signature-agent': `${WBA_AGENT}, sig2="https://other.example"` },
    },
    components: ['@method', '@target-uri', '@authority', { name: 'signature-agent', key: 'sig2' }],
  },
  refuse('signature_malformed', 'components'),
)

// ---- signature_stale ----
v(
  'created 61 s before the verifier',
  { request: GET_ME, created: T - 61 },
  refuse('signature_stale'),
)
v(
  'created 61 s after the verifier',
  { request: GET_ME, created: T + 61 },
  refuse('signature_stale'),
)
v(
  'created a day before the verifier',
  { request: GET_ME, created: T - 86_400 },
  refuse('signature_stale'),
)
v('expires passed', { request: GET_ME, expires: T - 1 }, refuse('signature_stale'))
v(
  'web-bot-auth expired',
  { profile: 'web-bot-auth', request: GET_ME, created: T - 30, lifetime: 10 },
  refuse('signature_stale'),
)

// ---- unknown_key, key_not_enrolled ----
v(
  'keyid a did:key that is not Ed25519',
  { request: GET_ME, keyid: 'did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme' },
  refuse('unknown_key'),
)
v('keyid a did:web', { request: GET_ME, keyid: 'did:web:agent.example' }, refuse('unknown_key'))
v(
  'keyid the RFC 9421 test key name',
  { request: GET_ME, keyid: 'test-key-ed25519' },
  refuse('unknown_key'),
)
v(
  'web-bot-auth keyid the thumbprint of a key never enrolled',
  { profile: 'web-bot-auth', key: 'mallory', request: GET_ME },
  refuse('key_not_enrolled'),
)

// ---- signature_invalid ----
v(
  'signed by another key than the keyid',
  { request: GET_ME, signer: 'mallory' },
  refuse('signature_invalid'),
)
v('method changed', { request: CREATE }, refuse('signature_invalid'), [
  (r) => {
    r.method = 'PUT'
  },
])
v('path changed', { request: GET_ME }, refuse('signature_invalid'), [
  (r) => {
    r.url = `${ORIGIN}/v1/mE`
  },
])
v('query added', { request: GET_ME }, refuse('signature_invalid'), [
  (r) => {
    r.url = `${ORIGIN}/v1/me?limit=20`
  },
])
v(
  'query percent-encoding changed',
  { request: { ...GET_ME, url: `${ORIGIN}/v1/me?path=a%2Fb` } },
  refuse('signature_invalid'),
  [
    (r) => {
      r.url = `${ORIGIN}/v1/me?path=a/b`
    },
  ],
)
v(
  'signed for another hub',
  { request: { ...GET_ME, url: 'https://other.example/v1/me' } },
  refuse('signature_invalid'),
)
v(
  'signed for another port of this hub',
  { request: { ...GET_ME, url: 'https://hub.example:8443/v1/me' } },
  refuse('signature_invalid'),
)
v('content-type changed', { request: CREATE }, refuse('signature_invalid'), [
  set('content-type', 'application/problem+json'),
])
v('Content-Digest and body both replaced', { request: CREATE }, refuse('signature_invalid'), [
  (r) => {
    r.body = '{"namespace":"vectors","kind":"vector/v1","data":{"n":2}}'
    r.headers['content-digest'] = contentDigest(Buffer.from(r.body))
  },
])
v('a covered field removed', { request: CREATE }, refuse('signature_invalid'), [
  set('content-digest', null),
])
v(
  'Idempotency-Key changed',
  { request: { ...CREATE, headers: { 'idempotency-key': 'vector-key-0003' } } },
  refuse('signature_invalid'),
  [set('idempotency-key', 'vector-key-0004')],
)
v('nonce changed', { request: GET_ME }, refuse('signature_invalid'), [
  edit('signature-input', ';nonce="', ';nonce="x'),
])
v('created changed within the window', { request: GET_ME }, refuse('signature_invalid'), [
  edit('signature-input', `;created=${T}`, `;created=${T - 1}`),
])
v('signature bytes flipped', { request: GET_ME }, refuse('signature_invalid'), [
  (r) => {
    const m = /^sig1=:([^:]+):$/.exec(r.headers.signature!)!
    const b = Buffer.from(m[1]!, 'base64')
    b[0]! ^= 1
    r.headers.signature = `sig1=:${b.toString('base64')}:`
  },
])
v(
  'web-bot-auth signed by another key than the thumbprint names',
  { profile: 'web-bot-auth', request: GET_ME, signer: 'mallory' },
  refuse('signature_invalid'),
)
v(
  'web-bot-auth Signature-Agent changed after signing',
  { profile: 'web-bot-auth', request: { ...GET_ME, headers: { 'signature-agent': WBA_AGENT } } },
  refuse('signature_invalid'),
  [set('signature-agent', 'sig1="https://impostor.example"')],
)
v(
  'web-bot-auth signed for another hub',
  { profile: 'web-bot-auth', request: { ...GET_ME, url: 'https://other.example/v1/me' } },
  refuse('signature_invalid'),
)

// ---- signature_replayed ----
v(
  'a nonce the key already used',
  { request: GET_ME, nonce: 'spent-nonce-1' },
  refuse('signature_replayed'),
  [],
  { seenNonces: [{ key: 'alice', nonce: 'spent-nonce-1' }] },
)
v(
  'web-bot-auth: a nonce the key already used under its did:key',
  { profile: 'web-bot-auth', request: GET_ME, nonce: 'spent-nonce-2' },
  refuse('signature_replayed'),
  [],
  { seenNonces: [{ key: 'alice', nonce: 'spent-nonce-2' }] },
)

// ---- digest_mismatch ----
v('body changed after signing', { request: CREATE }, refuse('digest_mismatch'), [
  (r) => {
    r.body = '{"namespace":"vectors","kind":"vector/v1","data":{"n":3}}'
  },
])
v('body cut short', { request: CREATE }, refuse('digest_mismatch'), [
  (r) => {
    r.body = r.body!.slice(0, -1)
  },
])
v(
  'a signed Content-Digest of another body',
  { request: { ...CREATE, headers: { 'content-digest': contentDigest(Buffer.from('{}')) } } },
  refuse('digest_mismatch'),
)
v(
  'a signed Content-Digest in an algorithm not accepted',
  {
    request: {
      ...CREATE,
      headers: {
        'content-digest': `md5=:${createHash('md5').update(CREATE.body!).digest('base64')}:`,
      },
    },
  },
  refuse('digest_mismatch'),
)

// ---- signing: what a signer must produce, byte for byte ----
function signing(name: string, s: Signing) {
  const { request, base } = sign(s)
  const { signature, 'signature-input': signatureInput, ...headers } = request.headers
  return {
    name,
    key: s.key ?? 'alice',
    profile: s.profile ?? 'baton',
    request: { ...s.request, headers: s.request.headers ?? {} },
    created: s.created ?? T,
    nonce: s.nonce,
    ...(s.profile === 'web-bot-auth' ? { expires: (s.created ?? T) + (s.lifetime ?? 60) } : {}),
    expected: { headers, signatureBase: base, signatureInput, signature },
  }
}

const document = {
  description:
    'Signed-request conformance vectors for Baton hubs and clients (RFC 9421 with Ed25519, RFC 9530 Content-Digest, and the Web Bot Auth profile). See conformance/README.md for the format.',
  format: 'baton-signed-requests/1',
  keys: Object.fromEntries(
    Object.entries(KEYS).map(([n, k]) => [
      n,
      { privateKeyJwk: k.privateKeyJwk, principal: k.principal, thumbprint: k.thumbprint },
    ]),
  ),
  verifier: { origin: ORIGIN, now: T, skewSeconds: 60, enrolled: ['alice'] },
  signing: [
    signing('GET without a body', { request: GET_ME, nonce: 'sign-001' }),
    signing('GET with a query', {
      request: { ...GET_ME, url: `${ORIGIN}/v1/resources?namespace=a%2Fb&limit=5` },
      nonce: 'sign-002',
    }),
    signing('POST with a JSON body', { request: CREATE, nonce: 'sign-003' }),
    signing('POST with an Idempotency-Key', {
      request: { ...CREATE, headers: { 'idempotency-key': 'sign-key-0001' } },
      nonce: 'sign-004',
    }),
    signing('web-bot-auth GET with a Signature-Agent', {
      profile: 'web-bot-auth',
      request: { ...GET_ME, headers: { 'signature-agent': WBA_AGENT } },
      nonce: 'sign-005',
    }),
    signing('web-bot-auth POST with a body', {
      profile: 'web-bot-auth',
      request: CREATE,
      nonce: 'sign-006',
      lifetime: 300,
    }),
  ],
  verification,
}

const out = path.join(import.meta.dirname, 'signed-requests.json')
if (process.argv[1] === import.meta.filename) {
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`)
  const negatives = verification.filter((x) => !('accept' in x.verdict)).length
  console.log(
    `${out}: ${document.signing.length} signing, ${verification.length - negatives} accepted, ${negatives} refused`,
  )
}

export { document }
