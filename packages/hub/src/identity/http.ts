import { type Readable, Transform } from 'node:stream'
import {
  BatonError,
  SIGNATURE_DIRECTORY_MEDIA_TYPE,
  SIGNATURE_DIRECTORY_PATH,
} from '@baton/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import type { Api } from '../http/api.js'
import { AUTH_KINDS } from '../ops/auth-kinds.js'
import type { Auth } from '../ops/operation.js'
import { handOnTrace } from '../telemetry/http.js'
import { DIRECTORY_MAX_AGE_S } from './service.js'
import { BodyDigest } from './verify.js'

/**
 * What a route declares about signatures, in its fastify route config; the signature hook
 * decides from this alone, never from the URL.
 */
export interface SignatureDeclaration {
  /** The route's declared auth: a kind whose table entry is `signed` needs a signed request. */
  auth?: Auth
  /**
   * A signature is optional, but one sent is judged as for a signed route (nonce, enrolment,
   * admission): MCP over Streamable HTTP, where a signed session reaches the agent tools.
   */
  optionalSignature?: boolean
  /** The route answers its signer in every admission state, and is not counted in its quota. */
  admissionExempt?: boolean
  /** A signed request's admission rides into the route's own first write (`runAdmitted`). */
  carriesAdmission?: boolean
}

declare module 'fastify' {
  interface FastifyContextConfig extends SignatureDeclaration {}
}

/**
 * What the signature hook does with a request to a route so declared: `admit` verifies it and
 * admits its signer (refusing it unsigned), `verify` only checks the signature it carries (so a
 * signed request moved onto another route is refused rather than answered), `none` reads nothing.
 */
export function signatureDemand(
  route: SignatureDeclaration | undefined,
  carriesSignature: boolean,
): 'admit' | 'verify' | 'none' {
  const declared = route?.auth !== undefined && AUTH_KINDS[route.auth].signed
  if (declared || (carriesSignature && route?.optionalSignature)) return 'admit'
  return carriesSignature ? 'verify' : 'none'
}

/** Runs a route's work and answers only once the request's admission is durable (`settleAfter`). */
export function runAdmitted<T>(
  ctx: AppContext,
  req: FastifyRequest,
  work: () => Promise<T>,
): Promise<T> {
  return ctx.identity.settleAfter(req.signed?.carry, work)
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]']

/** The authorities naming a hub, by listen host, local address and port (`ownAuthorities`). */
const authorities = new Map<string, Set<string>>()

/** An address as it appears in an authority: IPv4-mapped IPv6 unwrapped, IPv6 bracketed. */
function authorityHost(address: string): string {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (v4) return v4[1]!
  return address.includes(':') ? `[${address.toLowerCase()}]` : address.toLowerCase()
}

/** True for a loopback address or name (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(h)
}

/** The origin of the address and port a connection reached, as the hub's own listen address. */
export function localOrigin(req: FastifyRequest): string {
  const address = req.socket?.localAddress ?? '127.0.0.1'
  return `http://${authorityHost(address)}:${req.socket?.localPort ?? 80}`
}

/**
 * The authorities that name this hub for a connection when no public URL is configured: the
 * address and port the connection reached, the configured listen host, and the loopback names
 * when the connection came over loopback.
 */
function ownAuthorities(ctx: AppContext, req: FastifyRequest): Set<string> {
  const address = req.socket?.localAddress ?? '127.0.0.1'
  const port = req.socket?.localPort ?? 80
  // A hub listens on few addresses, and every signed request asks: worked out once for each.
  const key = `${ctx.config.host} ${address} ${port}`
  const known = authorities.get(key)
  if (known) return known
  const hosts = new Set([authorityHost(address)])
  // A wildcard listen address names no host a client could have signed for.
  if (!['0.0.0.0', '::', ''].includes(ctx.config.host)) hosts.add(authorityHost(ctx.config.host))
  if (isLoopback(address)) for (const name of LOOPBACK_NAMES) hosts.add(name)
  const out = new Set<string>()
  for (const host of hosts) {
    out.add(`${host}:${port}`)
    if (port === 80) out.add(host)
  }
  if (authorities.size >= 64) authorities.clear()
  authorities.set(key, out)
  return out
}

/**
 * The origin a client signed `@target-uri` against: BATON_PUBLIC_URL when set; else the
 * request's Host, but only when it names this hub's own listen address (never a Host alone, so
 * a request signed for another hub cannot be replayed here with its Host); else undefined.
 */
export function requestOrigin(ctx: AppContext, req: FastifyRequest): string | undefined {
  const { publicUrl } = ctx.config.identity
  if (publicUrl) return publicUrl
  const host = req.headers.host?.toLowerCase()
  return host !== undefined && ownAuthorities(ctx, req).has(host) ? `http://${host}` : undefined
}

/** True when the header section announces a body: a positive Content-Length or a transfer coding. */
function declaresBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length']
  if (length !== undefined) return Number(length) > 0
  return req.headers['transfer-encoding'] !== undefined
}

/** How long a refused request's connection is drained after its answer before it is reset. */
const LINGER_MS = 2000

/**
 * Answers a refused request with its body unread on a connection that then closes: it cannot
 * carry another request. Like a server's lingering close, the connection is half-closed after the
 * answer and what the client still sends is discarded for a moment, so the client reads the
 * answer instead of a reset (closing with unread bytes resets the connection at once).
 */
function closeUnread(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('connection', 'close')
  const socket = req.raw.socket
  // Node ends a `Connection: close` answer's socket through destroySoon once the answer is out.
  socket.destroySoon = function lingeringClose(this: typeof socket) {
    this.end()
    const timer = setTimeout(() => this.destroy(), LINGER_MS)
    timer.unref()
    this.once('close', () => clearTimeout(timer))
    req.raw.resume()
    this.resume()
  }
}

const tooLarge = (limit: number) =>
  new BatonError('body_too_large', 'The request body is too large', { limit })

/**
 * The body as it streams on to the parser, hashed as it passes: over `limit` bytes it is cut
 * (413), and at its end a body that does not match its Content-Digest is refused (401); then
 * `afterBody` runs, if given, before the parser sees the end.
 */
function checkedBody(
  payload: Readable,
  digest: BodyDigest,
  limit: number,
  onRefusal: () => void,
  afterBody?: () => Promise<void>,
): Readable {
  let received = 0
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length
      if (received > limit) {
        // The rest is left unread (and then discarded by the closing connection), not hashed.
        payload.unpipe(checked)
        onRefusal()
        done(tooLarge(limit))
        return
      }
      digest.update(chunk)
      // fastify compares the bytes it reads with Content-Length through this property.
      Object.assign(checked, { receivedEncodedLength: received })
      done(null, chunk)
    },
    flush(done) {
      try {
        digest.assertMatches()
      } catch (error) {
        done(error as Error)
        return
      }
      if (!afterBody) return done()
      afterBody().then(
        () => done(),
        (error: Error) => done(error),
      )
    },
  })
  // Not pipeline(): it would destroy the request on a refusal, and with it the connection the
  // refusal is answered on.
  payload.on('error', (error) => checked.destroy(error))
  payload.pipe(checked)
  return checked
}

/**
 * The hook that verifies every signed request before its body is read (so a tampered body is a
 * 401, not a JSON error, and an unsigned one costs nothing to refuse); the identity routes
 * themselves are operations (`operations.ts`).
 */
export function registerIdentityRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.identity

  // The directory draft: the hub's keys, the answer signed over the authority it was asked at.
  api.app.get(SIGNATURE_DIRECTORY_PATH, async (req, reply) => {
    const origin = requestOrigin(ctx, req) ?? localOrigin(req)
    const directory = await service.signatureDirectory(new URL(origin).host)
    reply.header('content-type', SIGNATURE_DIRECTORY_MEDIA_TYPE)
    reply.header('cache-control', `max-age=${DIRECTORY_MAX_AGE_S}`)
    reply.header('signature-input', directory.signatureInput)
    reply.header('signature', directory.signature)
    // Bytes, so the media type goes out as declared, with no charset parameter added.
    return Buffer.from(JSON.stringify(directory.body))
  })

  // Every signed request is judged on its header section before one byte of its body is read:
  // the RFC 9421 signature covers Content-Digest (RFC 9530), so the body is checked against it as
  // it streams in, and an unsigned, badly signed, unadmitted or oversized request is refused with
  // its body unread and its connection closed.
  api.app.decorateRequest('signed', null)

  api.app.addHook('preParsing', async (req, reply, payload) => {
    const carriesSignature =
      req.headers['signature-input'] !== undefined || req.headers.signature !== undefined
    // fastify builds routeOptions afresh on every read.
    const route = req.routeOptions
    const demand = signatureDemand(route.config, carriesSignature)
    if (demand === 'none') return payload
    const announcesBody = declaresBody(req)
    try {
      const origin = requestOrigin(ctx, req)
      const message = {
        method: req.method,
        targetUri: (origin ?? localOrigin(req)) + req.url,
        headers: req.headers,
      }
      const sig = await service.verify(message, announcesBody)
      if (origin === undefined) {
        throw new BatonError('signature_invalid', 'The request is addressed to another host', {
          reason: 'authority',
        })
      }
      const limit = route.bodyLimit ?? ctx.config.bodyLimitBytes
      if (Number(req.headers['content-length']) > limit) throw tooLarge(limit)
      let afterBody: (() => Promise<void>) | undefined
      if (demand === 'admit') {
        // The nonce, enrolment and admission are decided before the body is read: keys cost
        // nothing to make, so only an admitted principal may make the hub read a body at all.
        // The nonce is spent even if the body then fails its digest, as for any refused request.
        // A new key under open admission is admitted at once anyway, so its first request is
        // admitted after its body verifies, and a tampered first request enrols nothing. An
        // operation's request from an enrolled key, or with a body from a new key under open
        // admission, is judged with reads alone (`prepare`), and its nonce, quota charge and
        // enrolment then commit with the operation's own write (`runAdmitted`).
        const admission = {
          address: req.ip,
          admissionExempt: route.config.admissionExempt === true,
          trace: handOnTrace(req),
        }
        let prepared = route.config.carriesAdmission
          ? await service.prepare(sig, admission)
          : undefined
        // A new key's first request without a body writes nothing (or waits, reading its own
        // admission as it goes): it enrols at once, alone, as before it did anything else.
        if (prepared?.enrols && !announcesBody) {
          service.abandon(prepared.carry)
          prepared = undefined
        }
        if (prepared) {
          const { carry, principal } = prepared
          let held = false
          const hold = () => {
            held = true
            req.signed = { principal, carry }
          }
          // However the exchange ends (even a client gone before any answer), the nonce is spent;
          // but a new key's first request enrols only once its body verified. A carry a batch
          // already took commits (or fails) there, and its request was answered from it.
          reply.raw.once('close', () => {
            if (!held) service.abandon(carry)
            else if (!carry.taken) void service.settle(carry).catch(() => {})
          })
          if (prepared.enrols) afterBody = async () => hold()
          else hold()
        } else if (announcesBody && (await service.isNewUnderOpenAdmission(sig))) {
          afterBody = async () => {
            req.signed = { principal: await service.admit(sig, admission) }
          }
        } else {
          req.signed = { principal: await service.admit(sig, admission) }
        }
      }
      // On a route that asks for none, a signature is still checked (without enrolment or a
      // nonce), so a signed request whose path was changed to reach it is refused rather than
      // answered. A method whose routes read no body (GET) never drains this stream: its digest
      // vouches for bytes nothing uses.
      const digest = req.headers['content-digest']
      // No body announced and no digest: there are no bytes to check, and nothing after them.
      if (digest === undefined && afterBody === undefined && !announcesBody) return payload
      return checkedBody(
        payload,
        new BodyDigest(Array.isArray(digest) ? digest.join(', ') : digest),
        limit,
        () => closeUnread(req, reply),
        afterBody,
      )
    } catch (error) {
      closeUnread(req, reply)
      throw error
    }
  })

  // A request refused after its admission was prepared but before its route ran (a body over
  // the limit or off its digest, a malformed body) still spends its nonce before it is answered.
  // A callback hook, not an async one: every answer passes it, and almost none has to wait.
  api.app.addHook('onSend', (req, _reply, payload, done) => {
    const carry = req.signed?.carry
    if (!carry) return done(null, payload)
    service.settle(carry).then(
      () => done(null, payload),
      () => done(null, payload),
    )
  })
}
