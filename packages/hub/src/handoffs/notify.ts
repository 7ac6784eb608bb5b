import { lookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { BlockList, isIP } from 'node:net'
import { BatonError, type NotifySignal } from '@baton/protocol'
import type { Logger } from 'pino'

// Addresses a notify signal must never reach: private, loopback, link-local and other
// special-purpose ranges (RFC 6890), so a handoff cannot be used to probe the hub's network.
const forbidden = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  forbidden.addSubnet(net, prefix, 'ipv4')
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  forbidden.addSubnet(net, prefix, 'ipv6')
}
// IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4 address they carry (below); a
// BlockList rule for those ranges would also match every plain IPv4 address.
const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

/** Whether a signal may be delivered to `address`. */
export function isDeliverableAddress(address: string, allowLoopback: boolean): boolean {
  const family = isIP(address)
  if (family === 0) return false
  const type = family === 4 ? 'ipv4' : 'ipv6'
  if (allowLoopback && loopback.check(address, type)) return true
  const lower = address.toLowerCase()
  for (const prefix of ['::ffff:', '64:ff9b::']) {
    if (type === 'ipv6' && lower.startsWith(prefix)) {
      const v4 = lower.slice(prefix.length)
      if (isIP(v4) === 4) return isDeliverableAddress(v4, allowLoopback)
      return false
    }
  }
  return !forbidden.check(address, type)
}

function badUrl(message: string): never {
  throw new BatonError('invalid_notify_url', message, { field: 'notify_url' })
}

/**
 * Checks a notify_url when a handoff is created: an absolute http(s) URL with a host, no
 * credentials, and no literal address that could never be delivered to.
 */
export function checkNotifyUrl(raw: string, allowLoopback: boolean): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    badUrl('notify_url is not an absolute URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    badUrl('notify_url must be http or https')
  if (!url.hostname) badUrl('notify_url needs a host')
  if (url.username || url.password) badUrl('notify_url must not carry credentials')
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) && !isDeliverableAddress(host, allowLoopback)) {
    badUrl('notify_url points at a private, loopback or reserved address')
  }
  if (!isIP(host) && (host === 'localhost' || host.endsWith('.localhost')) && !allowLoopback) {
    badUrl('notify_url points at localhost')
  }
  return url
}

/** The outcome of one delivery attempt, for logs and tests. */
export type DeliveryOutcome = 'delivered' | 'refused-address' | 'failed'

/**
 * Delivers notify signals after commit, best effort: resolves the host at delivery time and
 * refuses private addresses, connects to the address it checked (no second lookup to rebind),
 * follows no redirects, times out, and retries once.
 */
export class Notifier {
  private inflight = new Set<Promise<unknown>>()

  constructor(
    private readonly opts: {
      allowLoopback: boolean
      timeoutMs: number
      retryDelayMs: number
      log?: Logger
      onOutcome?: (outcome: DeliveryOutcome) => void
    },
  ) {}

  enqueue(url: string, signal: NotifySignal): void {
    const p = this.deliver(url, signal)
      .then((outcome) => this.opts.onOutcome?.(outcome))
      .finally(() => this.inflight.delete(p))
    this.inflight.add(p)
  }

  /** Resolves when every delivery under way has finished; used at shutdown and in tests. */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight])
  }

  private async deliver(raw: string, signal: NotifySignal): Promise<DeliveryOutcome> {
    for (let attempt = 1; attempt <= 2; attempt++) {
      const outcome = await this.attempt(raw, signal).catch(() => 'failed' as const)
      if (outcome !== 'failed') {
        this.opts.log?.info(
          { handoff_id: signal.handoff_id, version: signal.version, outcome },
          'notify',
        )
        return outcome
      }
      if (attempt === 1) await new Promise((r) => setTimeout(r, this.opts.retryDelayMs))
    }
    this.opts.log?.warn({ handoff_id: signal.handoff_id, version: signal.version }, 'notify failed')
    return 'failed'
  }

  private async attempt(raw: string, signal: NotifySignal): Promise<DeliveryOutcome> {
    const url = new URL(raw)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const addresses = isIP(host)
      ? [{ address: host, family: isIP(host) }]
      : await lookup(host, { all: true, verbatim: true })
    if (addresses.length === 0) return 'failed'
    if (!addresses.every((a) => isDeliverableAddress(a.address, this.opts.allowLoopback))) {
      return 'refused-address'
    }
    const target = addresses[0]!
    const body = JSON.stringify(signal)
    const mod = url.protocol === 'https:' ? https : http
    return new Promise<DeliveryOutcome>((resolve, reject) => {
      const req = mod.request(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'baton-notify/1',
          },
          timeout: this.opts.timeoutMs,
          // Connect to the address just checked, never to a second answer from DNS.
          lookup: (_h, options, cb) => {
            if ((options as { all?: boolean }).all) {
              ;(cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(
                null,
                [target],
              )
            } else cb(null, target.address, target.family)
          },
        },
        (res) => {
          res.resume()
          res.on('end', () => {
            const code = res.statusCode ?? 0
            // A redirect is not followed: it counts as not delivered.
            resolve(code >= 200 && code < 300 ? 'delivered' : 'failed')
          })
          res.on('error', reject)
        },
      )
      req.on('timeout', () => req.destroy(new Error('timeout')))
      req.on('error', reject)
      req.end(body)
    })
  }
}
