import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** The cookie that carries an operator's dashboard session. */
export const SESSION_COOKIE = 'baton_session'

/** How long a dashboard session lasts after sign-in. */
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000

/** A verified session: its random id and when it ends. */
export interface DashboardSession {
  id: string
  expiresAt: number
}

const b64 = (buf: Buffer) => buf.toString('base64url')

/**
 * Dashboard sessions as HMAC-signed cookies, `v1.<expiresAt>.<id>.<mac>`. The key is derived from
 * the operator token, so every hub instance with the same token accepts the same cookie, and
 * changing the token ends every session at once. Signed-out ids are remembered until they would
 * have expired; the dashboard keeps them in the database and tells every instance (`remember`).
 */
export class SessionKeeper {
  private readonly key: Buffer
  private readonly ended = new Map<string, number>()

  constructor(adminToken: string) {
    this.key = createHash('sha256').update('baton-dashboard-session\0').update(adminToken).digest()
  }

  private mac(purpose: string, value: string): string {
    return b64(createHmac('sha256', this.key).update(`${purpose}\0${value}`).digest())
  }

  /** Starts a session: a cookie value holding a fresh random id, valid until `now + ttl`. */
  issue(now: number): { cookie: string; session: DashboardSession } {
    const id = b64(randomBytes(24))
    const expiresAt = now + SESSION_TTL_MS
    const body = `v1.${expiresAt}.${id}`
    return { cookie: `${body}.${this.mac('session', body)}`, session: { id, expiresAt } }
  }

  /** The session a cookie value proves, or undefined when it is forged, expired or ended. */
  verify(cookie: string | undefined, now: number): DashboardSession | undefined {
    if (!cookie) return undefined
    const parts = cookie.split('.')
    if (parts.length !== 4 || parts[0] !== 'v1') return undefined
    const [, exp, id, mac] = parts as [string, string, string, string]
    const expected = Buffer.from(this.mac('session', `v1.${exp}.${id}`))
    const given = Buffer.from(mac)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
    const expiresAt = Number(exp)
    if (!Number.isSafeInteger(expiresAt) || expiresAt <= now) return undefined
    if (this.ended.has(id)) return undefined
    return { id, expiresAt }
  }

  /** Ends a session on this instance (sign-out); the browser's cookie is cleared as well. */
  end(session: DashboardSession, now: number): void {
    this.remember(session.id, session.expiresAt, now)
  }

  /** Refuses a session id from now on, until it would have expired (a sign-out anywhere). */
  remember(id: string, expiresAt: number, now: number): void {
    for (const [ended, until] of this.ended) if (until <= now) this.ended.delete(ended)
    if (expiresAt > now) this.ended.set(id, expiresAt)
  }

  /** The CSRF token bound to a session; mutations must send it back in a header. */
  csrfToken(session: DashboardSession): string {
    return this.mac('csrf', session.id)
  }

  /** Checks a CSRF token against a session in constant time. */
  checkCsrf(session: DashboardSession, token: string | undefined): boolean {
    if (!token) return false
    const expected = Buffer.from(this.csrfToken(session))
    const given = Buffer.from(token)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }
}

/** Counts failed sign-ins per client address and refuses more than `max` in a window. */
export class SignInLimiter {
  private readonly failures = new Map<string, { count: number; since: number }>()

  constructor(
    private readonly max = 10,
    private readonly windowMs = 15 * 60 * 1000,
  ) {}

  /** Seconds until `ip` may try again, or 0 when it may try now. */
  retryAfter(ip: string, now: number): number {
    const f = this.failures.get(ip)
    if (!f || now - f.since >= this.windowMs) return 0
    return f.count >= this.max ? Math.ceil((f.since + this.windowMs - now) / 1000) : 0
  }

  fail(ip: string, now: number): void {
    if (this.failures.size > 10_000) {
      for (const [k, v] of this.failures)
        if (now - v.since >= this.windowMs) this.failures.delete(k)
    }
    const f = this.failures.get(ip)
    if (!f || now - f.since >= this.windowMs) this.failures.set(ip, { count: 1, since: now })
    else f.count += 1
  }

  succeed(ip: string): void {
    this.failures.delete(ip)
  }
}

/** Parses a Cookie header into name/value pairs (RFC 6265 syntax, values not decoded). */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (!header) return out
  for (const part of header.split(';')) {
    const i = part.indexOf('=')
    if (i < 0) continue
    const name = part.slice(0, i).trim()
    if (name && !(name in out)) out[name] = part.slice(i + 1).trim()
  }
  return out
}
