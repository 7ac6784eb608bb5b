import type { ServerResponse } from 'node:http'
import { BatonError } from '@baton/protocol'
import type { BatonEvent, EventBus } from '../events/bus.js'

/** How often an idle stream sends a comment, so proxies and browsers keep it open. */
export const HEARTBEAT_MS = 15_000

// Only these keys of an event's data reach the browser: ids, versions and states, never payloads.
const FORWARDED = [
  'handoff_id',
  'resourceId',
  'grantId',
  'transferId',
  'transfer_id',
  'principal',
  'id',
  'subject',
  'sequence',
  'version',
  'state',
  'ended',
] as const

/** The part of a bus event the dashboard may see: what changed, not what it holds. */
export function toDashboardEvent(event: BatonEvent): Record<string, unknown> {
  const ids: Record<string, unknown> = {}
  for (const key of FORWARDED) {
    const v = event.data?.[key]
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') ids[key] = v
  }
  return { type: event.type, topic: event.topic, at: event.at, ids }
}

/** How many streams may be open: per dashboard session, and on this instance in all. */
export interface StreamLimits {
  perSession: number
  total: number
}

// When a refused stream may be tried again: an open one has to end first, which takes a
// sign-out, a closed tab or a dropped connection.
const RETRY_AFTER_SECONDS = 5

/**
 * The dashboard's server-sent event streams: every committed change on the bus is forwarded to
 * every open stream as a hint to re-read. Each stream belongs to the session that opened it and
 * ends at that session's sign-out (`closeSession`), at its expiry, and at shutdown; the number
 * open per session and in all is capped, so a session cannot hold the hub's connections.
 */
export class DashboardStreams {
  private readonly bySession = new Map<string, Set<() => void>>()
  private count = 0

  constructor(
    private readonly bus: EventBus,
    private readonly limits: StreamLimits,
  ) {}

  /** How many streams are open; for tests. */
  get size(): number {
    return this.count
  }

  /** Throws `rate_limited` (429, Retry-After) when `sessionId` may not open one more stream. */
  assertRoom(sessionId: string): void {
    const mine = this.bySession.get(sessionId)?.size ?? 0
    if (mine < this.limits.perSession && this.count < this.limits.total) return
    const perSession = mine >= this.limits.perSession
    throw new BatonError(
      'rate_limited',
      perSession
        ? `This session already holds ${mine} event streams; close one first`
        : 'The hub holds as many dashboard event streams as it serves; try again later',
      {
        retry_after: RETRY_AFTER_SECONDS,
        limit: perSession ? this.limits.perSession : this.limits.total,
      },
      { 'retry-after': String(RETRY_AFTER_SECONDS) },
    )
  }

  /**
   * Serves one stream of `sessionId` on a raw response until the client leaves, `untilMs`
   * passes, the session signs out or the hub closes. Call `assertRoom` first.
   */
  serve(res: ServerResponse, sessionId: string, untilMs: number): void {
    let own = this.bySession.get(sessionId)
    if (!own) {
      own = new Set()
      this.bySession.set(sessionId, own)
    }
    const mine = own
    const release = () => {
      mine.delete(end)
      this.count--
      if (mine.size === 0 && this.bySession.get(sessionId) === mine) {
        this.bySession.delete(sessionId)
      }
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    })
    res.write('retry: 3000\n: connected\n\n')
    const send = (text: string) => {
      // A reader that stopped reading is dropped rather than buffered without bound.
      if (res.writableLength > 1 << 20) return end()
      res.write(text)
    }
    const unsubscribe = this.bus.subscribe('*', (event) => {
      send(`data: ${JSON.stringify(toDashboardEvent(event))}\n\n`)
    })
    const heartbeat = setInterval(() => send(': heartbeat\n\n'), HEARTBEAT_MS)
    const expiry = setTimeout(end, Math.max(0, Math.min(untilMs, 2 ** 31 - 1)))
    heartbeat.unref()
    expiry.unref()
    let ended = false
    function end() {
      if (ended) return
      ended = true
      unsubscribe()
      clearInterval(heartbeat)
      clearTimeout(expiry)
      release()
      // A sign-out ends the stream outright: the browser's reconnect then meets a 401.
      if (!res.writableEnded) res.end()
    }
    mine.add(end)
    this.count++
    res.on('close', end)
    res.on('error', end)
  }

  /** Ends every open stream of a session (its sign-out, here or on another instance). */
  closeSession(sessionId: string): void {
    for (const end of [...(this.bySession.get(sessionId) ?? [])]) end()
  }

  /** Ends every open stream; the hub calls it before it stops serving. */
  closeAll(): void {
    for (const ends of [...this.bySession.values()]) for (const end of [...ends]) end()
  }
}
