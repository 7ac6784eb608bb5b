import type { ServerResponse } from 'node:http'
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

/**
 * The dashboard's server-sent event streams: every committed change on the bus is forwarded to
 * every open stream as a hint to re-read. Streams end at their session's expiry and at shutdown.
 */
export class DashboardStreams {
  private readonly open = new Set<() => void>()

  constructor(private readonly bus: EventBus) {}

  /** How many streams are open; for tests. */
  get size(): number {
    return this.open.size
  }

  /** Serves one stream on a raw response until the client leaves, `untilMs` passes, or close. */
  serve(res: ServerResponse, untilMs: number): void {
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
    const open = this.open
    let ended = false
    function end() {
      if (ended) return
      ended = true
      unsubscribe()
      clearInterval(heartbeat)
      clearTimeout(expiry)
      open.delete(end)
      if (!res.writableEnded) res.end()
    }
    open.add(end)
    res.on('close', end)
    res.on('error', end)
  }

  /** Ends every open stream; the hub calls it before it stops serving. */
  closeAll(): void {
    for (const end of [...this.open]) end()
  }
}
