import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { BatonError } from '@baton/protocol'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { operatorListA2aTasks, operatorReadA2aTask } from '../a2a/operations.js'
import type { AppContext } from '../app.js'
import { operatorListBudgets } from '../budgets/operations.js'
import { operatorComputeOverview } from '../compute/operations.js'
import { operatorListGrants } from '../grants/operations.js'
import {
  operatorListHandoffs,
  operatorNotifyQueue,
  operatorReadHandoff,
  operatorReadHandoffPayload,
} from '../handoffs/operations.js'
import { operatorListHops, operatorReadHopChain } from '../hops/operations.js'
import type { Api } from '../http/api.js'
import { decidePrincipal, listPrincipals } from '../identity/operations.js'
import { operatorListMessages, operatorReadMessageBody } from '../messages/operations.js'
import { HTTP_INPUT, parseOperationInput } from '../ops/input.js'
import type { Operation } from '../ops/operation.js'
import { operatorOverview } from '../overview/operations.js'
import { operatorListResources, operatorReadResource } from '../resources/operations.js'
import { SIGNOUT_TOPIC } from '../sessions/service.js'
import { handOnTrace } from '../telemetry/http.js'
import {
  operatorListTransfers,
  operatorReadTransfer,
  operatorReadTransferSnapshot,
} from '../transfers/operations.js'
import { DashboardStreams } from './events.js'
import {
  type DashboardSession,
  parseCookies,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  SessionKeeper,
  SignInLimiter,
} from './session.js'

const ASSET_DIR = path.join(import.meta.dirname, 'assets')

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
}

// What the sign-in page needs; every other asset is served only within a session.
const PUBLIC_ASSETS = new Set(['app.css', 'signin.js'])

/** The headers of every dashboard answer: no inline scripts or styles, no framing, no referrer. */
export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

interface Asset {
  body: Buffer
  type: string
}

function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(ASSET_DIR)) {
    const type = CONTENT_TYPES[path.extname(name)]
    if (type) assets.set(name, { body: readFileSync(path.join(ASSET_DIR, name)), type })
  }
  return assets
}

// A read answers at once: its caller going away changes nothing it does.
const NEVER_ABORTED = { aborted: false, addEventListener() {}, removeEventListener() {} }

const text = (v: unknown) => (typeof v === 'string' && v.length <= 500 ? v : undefined)

/** An Ed25519 did:key as the hub derives principals: `did:key:z6Mk` and base58btc. */
const DID_KEY = /^did:key:z[1-9A-HJ-NP-Za-km-z]{40,60}$/

/**
 * The did:keys an answer names, in one walk over at most `maxNodes` values, at most `max` of
 * them: the page shows each beside its label, so the answer carries the labels it needs.
 */
function principalsIn(answer: unknown, max = 500, maxNodes = 50_000): string[] {
  const found = new Set<string>()
  const stack: unknown[] = [answer]
  for (let seen = 0; stack.length > 0 && seen < maxNodes && found.size < max; seen++) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (DID_KEY.test(v)) found.add(v)
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push(x)
    } else if (v !== null && typeof v === 'object') {
      for (const x of Object.values(v)) stack.push(x)
    }
  }
  return [...found]
}

/** The one-time link of `baton dev` sends a browser here when its code is used or wrong. */
const LINK_MESSAGES: Record<string, string> = {
  used: 'This sign-in link was already used; sign in with the operator token.',
  invalid: 'This sign-in link is not valid; sign in with the operator token.',
}

const SIGNOUT_REFRESH_MS = 5000

/**
 * The operator dashboard (issue 7), served by the hub itself: a sign-in page at `/`, the app at
 * `/dashboard/`, its read API under `/dashboard/api/`, live changes at `/dashboard/events`.
 * Without `BATON_ADMIN_TOKEN` every dashboard path shows only a page saying it is disabled.
 */
export function registerDashboard(api: Api, ctx: AppContext): void {
  const assets = loadAssets()
  const page = (name: string) => assets.get(name)!.body.toString('utf8')
  const adminToken = ctx.config.identity.adminToken
  const keeper = adminToken ? new SessionKeeper(adminToken) : undefined
  const limiter = new SignInLimiter()
  const streams = new DashboardStreams(ctx.bus, {
    perSession: ctx.config.dashboard.streamsPerSession,
    total: ctx.config.dashboard.streamsMax,
  })
  const now = () => ctx.clock.now()

  // Sign-outs hold on every instance and across restarts: each is written to the database and
  // announced on the bus; each instance loads them at start and re-reads them now and then, so a
  // missed announcement only delays the refusal by a few seconds.
  const loadSignouts = async () => {
    if (!keeper) return
    for (const signout of await ctx.sessions.live()) {
      keeper.remember(signout.sessionId, signout.expiresAt, now())
      streams.closeSession(signout.sessionId)
    }
  }
  const unsubscribe = ctx.bus.subscribe(SIGNOUT_TOPIC, (event) => {
    const { sessionId, expiresAt } = event.data as { sessionId?: unknown; expiresAt?: unknown }
    if (typeof sessionId === 'string' && typeof expiresAt === 'number') {
      keeper?.remember(sessionId, expiresAt, now())
      streams.closeSession(sessionId)
    }
  })
  const refresh = keeper
    ? setInterval(() => void loadSignouts().catch(() => {}), SIGNOUT_REFRESH_MS)
    : undefined
  refresh?.unref()
  api.app.addHook('onReady', async () => {
    await loadSignouts()
  })

  // Open event streams would hold graceful shutdown until its grace ran out; end them first.
  api.app.addHook('preClose', (done) => {
    clearInterval(refresh)
    unsubscribe()
    streams.closeAll()
    done()
  })

  const html = (reply: FastifyReply, status: number, body: string) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(body)

  const signInPage = (message?: string) =>
    message
      ? page('signin.html').replace(
          '<p id="signin-error" class="error" role="alert" hidden></p>',
          `<p id="signin-error" class="error" role="alert">${message}</p>`,
        )
      : page('signin.html')

  const sessionOf = (req: FastifyRequest): DashboardSession | undefined =>
    keeper?.verify(parseCookies(req.headers.cookie)[SESSION_COOKIE], now())

  const isHttps = (req: FastifyRequest) =>
    req.protocol === 'https' || ctx.config.identity.publicUrl?.startsWith('https:') === true

  const cookie = (req: FastifyRequest, value: string, maxAgeSeconds: number) =>
    [
      `${SESSION_COOKIE}=${value}`,
      'Path=/',
      'HttpOnly',
      'SameSite=Strict',
      `Max-Age=${maxAgeSeconds}`,
      ...(isHttps(req) ? ['Secure'] : []),
    ].join('; ')

  /** The session of an API or stream request; throws the stable codes otherwise. */
  const requireSession = (req: FastifyRequest): DashboardSession => {
    if (!keeper) {
      throw new BatonError(
        'admin_disabled',
        'The dashboard is off: the hub has no BATON_ADMIN_TOKEN',
      )
    }
    const session = sessionOf(req)
    if (!session)
      throw new BatonError('dashboard_signin_required', 'Sign in to the dashboard first')
    return session
  }

  /** A mutation also needs the session's CSRF token and, when the browser sends one, our origin. */
  const requireMutation = (req: FastifyRequest): DashboardSession => {
    const session = requireSession(req)
    const origin = req.headers.origin
    if (typeof origin === 'string') {
      let host: string | undefined
      try {
        host = new URL(origin).host
      } catch {
        host = undefined
      }
      const publicHost = ctx.config.identity.publicUrl
        ? new URL(ctx.config.identity.publicUrl).host
        : undefined
      if (host === undefined || (host !== req.host && host !== publicHost)) {
        throw new BatonError('csrf_token_invalid', 'The request came from another origin')
      }
    }
    const token = req.headers['x-csrf-token']
    if (!keeper!.checkCsrf(session, typeof token === 'string' ? token : undefined)) {
      throw new BatonError('csrf_token_invalid', 'The CSRF token is missing or wrong')
    }
    return session
  }

  const register = async (scope: FastifyInstance) => {
    scope.addHook('onRequest', async (_req, reply) => {
      reply.headers(SECURITY_HEADERS)
    })
    // The sign-in form also works without JavaScript, as an ordinary form post.
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    )

    scope.get('/', async (req, reply) => {
      if (!keeper) return html(reply, 403, page('disabled.html'))
      if (sessionOf(req)) return reply.code(303).header('location', '/dashboard/').send()
      return html(reply, 200, signInPage())
    })

    const appPage = async (req: FastifyRequest, reply: FastifyReply) => {
      if (!keeper) return html(reply, 403, page('disabled.html'))
      // Without a session, a dashboard page is nothing but the sign-in page; after a one-time
      // link that could not sign in, it says why (a fixed text, never from the request).
      if (!sessionOf(req)) {
        const link = (req.query as Record<string, unknown> | undefined)?.link
        const message = typeof link === 'string' ? LINK_MESSAGES[link] : undefined
        return html(reply, 401, signInPage(message))
      }
      const url = req.url.split('?')[0]!
      if (url.startsWith('/dashboard/api/')) {
        throw new BatonError('not_found', `No route ${req.method} ${url}`)
      }
      return html(reply, 200, page('app.html'))
    }
    scope.get('/dashboard', appPage)
    scope.get('/dashboard/', appPage)
    scope.get('/dashboard/*', appPage)

    scope.get('/dashboard/assets/:name', async (req, reply) => {
      const { name } = req.params as { name: string }
      const asset = assets.get(name)
      if (!asset || name.endsWith('.html')) {
        throw new BatonError('not_found', `No dashboard asset ${name}`)
      }
      if (!PUBLIC_ASSETS.has(name)) requireSession(req)
      return reply.type(asset.type).header('cache-control', 'no-cache').send(asset.body)
    })

    scope.post('/dashboard/session', async (req, reply) => {
      const body = (req.body ?? {}) as Record<string, unknown>
      const form = !String(req.headers['content-type'] ?? '').includes('json')
      if (!keeper) {
        if (form) return html(reply, 403, page('disabled.html'))
        throw new BatonError(
          'admin_disabled',
          'The dashboard is off: the hub has no BATON_ADMIN_TOKEN',
        )
      }
      const retry = limiter.retryAfter(req.ip, now())
      if (retry > 0) {
        throw new BatonError(
          'rate_limited',
          'Too many failed sign-ins from this address',
          { retry_after: retry },
          { 'retry-after': String(retry) },
        )
      }
      try {
        // The same constant-time check the admin API uses.
        ctx.identity.assertAdmin(text(body.token))
      } catch (error) {
        limiter.fail(req.ip, now())
        if (form) return html(reply, 401, signInPage('The operator token is wrong.'))
        throw error
      }
      limiter.succeed(req.ip)
      const { cookie: value } = keeper.issue(now())
      reply.header('set-cookie', cookie(req, value, SESSION_TTL_MS / 1000))
      reply.header('cache-control', 'no-store')
      if (form) return reply.code(303).header('location', '/dashboard/').send()
      return { ok: true, next: '/dashboard/' }
    })

    scope.post('/dashboard/signout', async (req, reply) => {
      const session = requireMutation(req)
      keeper!.end(session, now())
      // Streams opened before the sign-out end with it; other instances end theirs when they
      // hear of it on the bus, or at their next re-read of the sign-outs.
      streams.closeSession(session.id)
      await ctx.sessions.signOut({ sessionId: session.id, expiresAt: session.expiresAt })
      reply.header('set-cookie', cookie(req, '', 0))
      return reply.code(204).send()
    })

    scope.get('/dashboard/api/session', async (req, reply) => {
      const session = requireSession(req)
      reply.header('cache-control', 'no-store')
      return {
        csrfToken: keeper!.csrfToken(session),
        expiresAt: new Date(session.expiresAt).toISOString(),
        hubVersion: ctx.version,
        store: ctx.database.caps.name,
        admission: ctx.config.identity.admission,
      }
    })

    // Read API: every answer needs a session and is never cached. Each read is an operator
    // operation (also served under /admin/v1/ to the admin token), run here with its own input
    // schemas for the session's browser. An answer that names principals carries their display
    // labels (`labels`, by did:key); revealed contents do not.
    const read = (url: string, op: Operation, { labels = true } = {}) =>
      scope.get(url, async (req, reply) => {
        requireSession(req)
        reply.header('cache-control', 'no-store')
        // The pages send every filter, an unset one as empty: the operation reads it as absent.
        const filters = Object.entries((req.query ?? {}) as Record<string, unknown>).filter(
          ([, v]) => v !== '',
        )
        const answer: unknown = await op.run(
          ctx,
          { ip: req.ip, signal: NEVER_ABORTED },
          parseOperationInput(
            op,
            { params: req.params, query: Object.fromEntries(filters) },
            HTTP_INPUT,
            ctx.config,
          ),
        )
        if (!labels || answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
          return answer
        }
        return { ...answer, labels: await ctx.identity.labelsOf(principalsIn(answer)) }
      })

    read('/dashboard/api/overview', operatorOverview)
    read('/dashboard/api/principals', listPrincipals)
    read('/dashboard/api/handoffs', operatorListHandoffs)
    read('/dashboard/api/handoffs/:id', operatorReadHandoff)
    read('/dashboard/api/handoffs/:id/payload', operatorReadHandoffPayload, { labels: false })
    read('/dashboard/api/resources', operatorListResources)
    read('/dashboard/api/resources/:id', operatorReadResource)
    read('/dashboard/api/grants', operatorListGrants)
    read('/dashboard/api/messages', operatorListMessages)
    read('/dashboard/api/messages/:id/body', operatorReadMessageBody, { labels: false })
    read('/dashboard/api/transfers', operatorListTransfers)
    read('/dashboard/api/transfers/:id', operatorReadTransfer)
    read('/dashboard/api/transfers/:id/snapshot', operatorReadTransferSnapshot, {
      labels: false,
    })
    read('/dashboard/api/notify', operatorNotifyQueue)
    read('/dashboard/api/hops', operatorListHops)
    read('/dashboard/api/compute', operatorComputeOverview)
    read('/dashboard/api/a2a', operatorListA2aTasks)
    read('/dashboard/api/a2a/:id', operatorReadA2aTask)
    read('/dashboard/api/hops/:digest', operatorReadHopChain)
    read('/dashboard/api/budgets', operatorListBudgets)

    // Admission decisions are the admin API's operation, run for the session: the same input
    // schemas, the same service call (which announces `principal.decided` once it commits).
    scope.post('/dashboard/api/principals/:principal/:decision', async (req, reply) => {
      requireMutation(req)
      const view = await decidePrincipal.run(
        ctx,
        { ip: req.ip, signal: NEVER_ABORTED, trace: handOnTrace(req) },
        parseOperationInput(decidePrincipal, { params: req.params }, HTTP_INPUT, ctx.config),
      )
      reply.header('cache-control', 'no-store')
      return view
    })

    scope.get('/dashboard/events', async (req, reply) => {
      const session = requireSession(req)
      if (ctx.isClosing()) throw new BatonError('shutting_down', 'The hub is shutting down')
      streams.assertRoom(session.id)
      reply.hijack()
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.raw.setHeader(k, v)
      streams.serve(reply.raw, session.id, session.expiresAt - now())
    })
  }
  void api.app.register(register)
}
