import type { JsonWebKey } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { loadIdentity, SignedClient } from '@baton/client'
import {
  ContextError,
  createDigestRef,
  createSigner,
  grantDigest,
  type Handoff,
  handoffDigest,
  type Ref,
  type SignedElement,
  type StatusState,
  signOffer,
  signStatus,
  type TrustConfig,
  toHandoff,
  toHandoffJson,
  verifyHandoff,
  verifyStatus,
} from '@baton/context'
import { parseWholeNumber } from '@baton/protocol'
import { didKeysIn, withLabels } from './labels.js'

const USAGE = `baton context <command> [options]

  offer   --key F --iss ID --aud ID --dialog D [--kid K] [--task T] [--obo P] [--grant-file F]
          [--ttl 120] [--iat SEC] [--hop H] [--ref-file F]... [--prev-file F | --chain-file F]
          Signs an offer and prints the Handoff object { offer, chain? }. --prev-file names the
          upstream handoff (or JWS) by digest; --chain-file also carries its chain.
  status  --key F --iss ID --offer-file F --state S [--kid K] [--reason R] [--detail T] [--iat SEC]
          Signs a status (accepted|rejected|completed|failed|canceled) and prints { status }.
  verify  --trust F --aud ID (--handoff-file F | --status-file F [--offer-file F])
          [--now SEC] [--dialog D] [--require-full-chain] [--skew SEC] [--max-lifetime SEC]
          [--identity F] [--json]
          Runs the seven checks (no replay store) and prints { ok, reason?, ... }; exit 1 on refusal.
          Each iss and aud is shown as its label beside its short did:key when one is known: from
          a "label" beside a key in the trust file, or from the hub of --identity (GET /v1/labels,
          signed as that identity). --json prints them bare.
  digest  <file|->
          Prints the handoff digest: of a JWS, of a Handoff's offer, of a { status }, else of the
          file's octets (a COSE_Sign1).

Keys are JWK files (a private JWK to sign). The trust file maps each iss to a public JWK, a list
of them, or { "key": JWK, "kid": K }. Times are NumericDate seconds.`

const STATES: readonly string[] = ['accepted', 'rejected', 'completed', 'failed', 'canceled']

class UsageError extends Error {}

/** `baton context offer|status|verify|digest`: the signed handoff context from a shell. */
export async function contextCommand(
  argv: string[],
  io: { stdout: (s: string) => void; stderr: (s: string) => void; json?: boolean },
): Promise<number> {
  try {
    return await run(argv, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`baton context: ${error.message}\n\n${USAGE}`)
      return 64
    }
    if (error instanceof ContextError) {
      io.stderr(`baton context: ${error.reason}: ${error.message}`)
      return 1
    }
    io.stderr(`baton context: ${error instanceof Error ? error.message : String(error)}`)
    return 2
  }
}

async function run(
  argv: string[],
  io: { stdout: (s: string) => void; stderr: (s: string) => void; json?: boolean },
): Promise<number> {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : 'bad arguments')
  }
  const { values: v, positionals } = parsed
  const [sub, ...rest] = positionals
  if (v.help === true) {
    io.stdout(USAGE)
    return 0
  }
  const print = (value: unknown) => io.stdout(`${JSON.stringify(value, null, 2)}\n`)
  const now = () => (v.now === undefined ? Date.now() : seconds(v.now, 'now') * 1000)

  switch (sub) {
    case 'offer': {
      const signer = await signerFrom(v)
      const upstream = v['chain-file'] ?? v['prev-file']
      if (v['chain-file'] !== undefined && v['prev-file'] !== undefined) {
        throw new UsageError('give --prev-file or --chain-file, not both')
      }
      const after = upstream === undefined ? undefined : await readHandoffFile(upstream)
      const refs: Ref[] = []
      for (const f of v['ref-file'] ?? []) refs.push(createDigestRef(await readFile(f)))
      const offer = signOffer({
        signer,
        aud: need(v.aud, 'aud'),
        dialog: need(v.dialog, 'dialog'),
        ...(v.task === undefined ? {} : { task: v.task }),
        ...(v.obo === undefined ? {} : { obo: v.obo }),
        ...(v['grant-file'] === undefined
          ? {}
          : { grant: grantDigest(await readFile(v['grant-file'])) }),
        ...(v.hop === undefined ? {} : { hop: v.hop }),
        ...(v.ttl === undefined ? {} : { ttlS: seconds(v.ttl, 'ttl') }),
        ...(v.iat === undefined ? {} : { iat: seconds(v.iat, 'iat') }),
        ...(after === undefined ? {} : { prev: after.offer }),
        ...(refs.length === 0 ? {} : { refs }),
        now,
      })
      const handoff =
        after === undefined
          ? toHandoff(offer)
          : toHandoff(offer, { after, chain: v['chain-file'] !== undefined })
      print(toHandoffJson(handoff))
      return 0
    }
    case 'status': {
      const signer = await signerFrom(v)
      const state = need(v.state, 'state')
      if (!STATES.includes(state)) throw new UsageError(`--state is one of ${STATES.join(', ')}`)
      const offer = (await readHandoffFile(need(v['offer-file'], 'offer-file'))).offer
      const status = signStatus({
        signer,
        offer,
        state: state as StatusState,
        ...(v.reason === undefined ? {} : { reason: v.reason as never }),
        ...(v.detail === undefined ? {} : { detail: v.detail }),
        ...(v.iat === undefined ? {} : { iat: seconds(v.iat, 'iat') }),
        now,
      })
      print({ status: status.element })
      return 0
    }
    case 'verify': {
      const { trust, labels: trusted } = splitTrust(await readJson(need(v.trust, 'trust')))
      const audience = need(v.aud, 'aud')
      // A verdict is printed with the names people know the parties by, unless --json.
      const printNamed = async (value: Record<string, unknown>) => {
        if (v.json === true || io.json === true) return print(value)
        const dids = [...didKeysIn(value)]
        const labels = { ...(await hubLabels(v.identity, dids)), ...trusted }
        print(withLabels(value, labels))
      }
      if (v['status-file'] !== undefined) {
        const status = await readElementOrObject(v['status-file'], 'status')
        const offer =
          v['offer-file'] === undefined ? undefined : (await readHandoffFile(v['offer-file'])).offer
        const r = verifyStatus(status, {
          trust,
          audience,
          now,
          ...(offer === undefined ? {} : { offer }),
          ...(v.skew === undefined ? {} : { skewMs: seconds(v.skew, 'skew') * 1000 }),
        })
        await printNamed(r.ok ? { ok: true, digest: r.digest, ...r.claims } : { ...r })
        return r.ok ? 0 : 1
      }
      const handoff = await readHandoffFile(
        need(v['handoff-file'], 'handoff-file or --status-file'),
      )
      const r = await verifyHandoff(handoff, {
        trust,
        audience,
        now,
        ...(v.dialog === undefined ? {} : { dialog: v.dialog }),
        ...(v['require-full-chain'] === true ? { requireFullChain: true } : {}),
        ...(v.skew === undefined ? {} : { skewMs: seconds(v.skew, 'skew') * 1000 }),
        ...(v['max-lifetime'] === undefined
          ? {}
          : { maxLifetimeMs: seconds(v['max-lifetime'], 'max-lifetime') * 1000 }),
      })
      if (r.ok) {
        await printNamed({
          ok: true,
          digest: r.digest,
          iss: r.claims.iss,
          aud: r.claims.aud,
          hop: r.claims.hop,
          dialog: r.claims.dialog,
          chain: r.chain.map((l) => ({ iss: l.claims.iss, aud: l.claims.aud, digest: l.digest })),
          partial: r.partial,
          origin: r.origin,
          refs: r.refs.map((x) => ({ kind: x.ref.kind, digest: x.ref.digest, outcome: x.outcome })),
          replay: 'not-checked',
        })
        return 0
      }
      await printNamed({ ...r })
      return 1
    }
    case 'digest': {
      const file = rest[0]
      if (file === undefined) throw new UsageError('digest needs a file, or - for standard input')
      const bytes = file === '-' ? await readStdin() : await readFile(file)
      io.stdout(`${digestOf(bytes)}\n`)
      return 0
    }
    default:
      throw new UsageError(sub === undefined ? 'a command is needed' : `unknown command ${sub}`)
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      key: { type: 'string' },
      iss: { type: 'string' },
      kid: { type: 'string' },
      aud: { type: 'string' },
      dialog: { type: 'string' },
      task: { type: 'string' },
      obo: { type: 'string' },
      'grant-file': { type: 'string' },
      ttl: { type: 'string' },
      iat: { type: 'string' },
      hop: { type: 'string' },
      'ref-file': { type: 'string', multiple: true },
      'prev-file': { type: 'string' },
      'chain-file': { type: 'string' },
      'offer-file': { type: 'string' },
      state: { type: 'string' },
      reason: { type: 'string' },
      detail: { type: 'string' },
      trust: { type: 'string' },
      'handoff-file': { type: 'string' },
      'status-file': { type: 'string' },
      now: { type: 'string' },
      skew: { type: 'string' },
      'max-lifetime': { type: 'string' },
      'require-full-chain': { type: 'boolean' },
      identity: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

function need(value: string | undefined, name: string): string {
  if (value === undefined || value.length === 0) throw new UsageError(`--${name} is required`)
  return value
}

function seconds(value: string, name: string): number {
  const n = parseWholeNumber(value)
  if (n === undefined) throw new UsageError(`--${name} must be whole seconds`)
  return n
}

/**
 * The trust file without its labels, and the labels: an issuer's entry (`{ "key": JWK, "kid": K }`
 * or a list of them) may carry a `label` to show beside its did:key. Labels are for people only;
 * the verifier never sees them.
 */
function splitTrust(file: unknown): { trust: TrustConfig; labels: Record<string, string> } {
  const trust: Record<string, unknown> = {}
  const labels: Record<string, string> = {}
  for (const [iss, entry] of Object.entries((file ?? {}) as Record<string, unknown>)) {
    const strip = (e: unknown) => {
      if (e === null || typeof e !== 'object' || !('label' in e)) return e
      const { label, ...rest } = e as { label?: unknown }
      if (typeof label === 'string') labels[iss] = label
      return rest
    }
    trust[iss] = Array.isArray(entry) ? entry.map(strip) : strip(entry)
  }
  return { trust: trust as TrustConfig, labels }
}

/** The labels the hub of an identity file knows for `dids`, or none without one. */
async function hubLabels(
  identityFile: string | undefined,
  dids: string[],
): Promise<Record<string, string>> {
  if (identityFile === undefined || dids.length === 0) return {}
  const identity = await loadIdentity(identityFile)
  const client = await SignedClient.connect(identity.hub, identity)
  const q = encodeURIComponent(dids.slice(0, 100).join(','))
  const answer = await client.call<{ labels: Record<string, string> }>(
    'GET',
    `/v1/labels?principals=${q}`,
  )
  return answer.labels
}

async function signerFrom(v: { key?: string; iss?: string; kid?: string }) {
  const jwk = await readJson(need(v.key, 'key'))
  return createSigner({
    iss: need(v.iss, 'iss'),
    key: jwk as JsonWebKey,
    ...(v.kid === undefined ? {} : { kid: v.kid }),
  })
}

async function readJson(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8')
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError(`${file} is not JSON`)
  }
}

/** A Handoff from a file holding the Handoff JSON or a bare JWS (surrounding whitespace ignored). */
async function readHandoffFile(file: string): Promise<Handoff> {
  const value = await readElementOrObject(file, 'offer')
  if (typeof value === 'string') return { offer: value }
  return value as Handoff
}

async function readElementOrObject(file: string, member: string): Promise<unknown> {
  const text = (await readFile(file, 'utf8')).trim()
  if (isCompactJws(text)) return text
  try {
    const value = JSON.parse(text) as Record<string, unknown>
    if (typeof value === 'object' && value !== null && member in value) return value
  } catch {
    // fall through to the usage error
  }
  throw new UsageError(`${file} holds neither a JWS nor a JSON object with "${member}"`)
}

function isCompactJws(text: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/.test(text)
}

function digestOf(bytes: Buffer): string {
  const text = bytes.toString('latin1').trim()
  if (isCompactJws(text)) return handoffDigest(text)
  if (text.startsWith('{')) {
    try {
      const v = JSON.parse(text) as { offer?: unknown; status?: unknown }
      const el = (v.offer ?? v.status) as SignedElement | undefined
      if (typeof el === 'string') return handoffDigest(el)
    } catch {
      // not JSON: the octets themselves
    }
  }
  return handoffDigest(bytes)
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}
