import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { Clock } from '../clock.js'

/** The caps of one hub instance's table of `/mcp` sessions. */
export interface SessionLimits {
  /** Sessions held at once on this instance; past it, an initialize is answered without one. */
  maxTotal: number
  /** Sessions one principal holds; its least recently used one is closed for a new one. */
  maxPerPrincipal: number
  /** A session with no request and no open event stream for this long is closed. */
  idleMs: number
}

/** The defaults: a subscriber needs one session, a few cover an agent's restarts. */
export const SESSION_LIMITS: SessionLimits = {
  maxTotal: 1000,
  maxPerPrincipal: 4,
  idleMs: 10 * 60 * 1000,
}

/** One `/mcp` session: its server and transport, bound to the principal that opened it. */
export interface McpSession {
  id: string
  principal: string
  server: McpServer
  transport: StreamableHTTPServerTransport
  lastSeenAt: number
  /** Open GET event streams; a session with one is not idle. */
  streams: number
}

/**
 * The `/mcp` sessions of one hub instance, bounded per principal and in total, closed when idle.
 * A session is found only by its id together with the principal that signs the request, so a
 * session id alone is worth nothing to anyone without the key.
 */
export class SessionTable {
  private readonly sessions = new Map<string, McpSession>()

  constructor(
    private readonly clock: Clock,
    private readonly limits: SessionLimits = SESSION_LIMITS,
  ) {}

  get size(): number {
    return this.sessions.size
  }

  /** Closes idle sessions, then answers whether one more fits in the total. */
  hasRoom(): boolean {
    this.sweep()
    return this.sessions.size < this.limits.maxTotal
  }

  /** Adds a session, first closing the principal's least recently used ones past its cap. */
  add(session: McpSession): void {
    const own = [...this.sessions.values()]
      .filter((s) => s.principal === session.principal)
      .sort((a, b) => a.lastSeenAt - b.lastSeenAt)
    while (own.length >= this.limits.maxPerPrincipal) this.close(own.shift()!.id)
    this.sessions.set(session.id, session)
  }

  /**
   * The session of this id opened by this principal, touched; undefined for a missing, idle or
   * another principal's session, which the caller answers alike.
   */
  find(id: string, principal: string | undefined): McpSession | undefined {
    const s = this.sessions.get(id)
    if (!s || s.principal !== principal) return undefined
    if (this.isIdle(s)) {
      this.close(id)
      return undefined
    }
    s.lastSeenAt = this.clock.now()
    return s
  }

  /** Forgets a session and closes its server (which ends its subscriptions) and transport. */
  close(id: string): void {
    const s = this.sessions.get(id)
    if (!s) return
    this.sessions.delete(id)
    void s.transport.close().catch(() => {})
    void s.server.close().catch(() => {})
  }

  /** Closes every session of a principal (its admission changed) or of the instance. */
  closeAll(principal?: string): void {
    for (const s of [...this.sessions.values()]) {
      if (principal === undefined || s.principal === principal) this.close(s.id)
    }
  }

  private isIdle(s: McpSession): boolean {
    return s.streams === 0 && this.clock.now() - s.lastSeenAt >= this.limits.idleMs
  }

  private sweep(): void {
    for (const s of [...this.sessions.values()]) if (this.isIdle(s)) this.close(s.id)
  }
}
