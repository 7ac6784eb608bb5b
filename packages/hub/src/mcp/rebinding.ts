import { isIP } from 'node:net'
import { BatonError } from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]']
const WILDCARDS = new Set(['', '0.0.0.0', '::', '[::]'])

function isLoopbackAddress(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  return bare === 'localhost' || bare === '::1' || (isIP(bare) === 4 && bare.startsWith('127.'))
}

/** The host names (lowercase, IPv6 in brackets) a request to `/mcp` may name in `Host`. */
export interface HostPolicy {
  /** Any Host passes (`*` in BATON_ALLOWED_HOSTS). */
  any: boolean
  /** Names that pass with any port. */
  names: Set<string>
  /** `name:port` entries that pass only with that port. */
  authorities: Set<string>
  /** Origins a browser page may call from, besides the hub's own (`*`: any). */
  origins: Set<string>
  publicOrigin: string | undefined
}

/**
 * The allow-list of DNS rebinding protection, derived once from config: the public URL's host,
 * the listen address when it names one host, the loopback names when the hub listens on
 * loopback or on every interface, and BATON_ALLOWED_HOSTS / BATON_ALLOWED_ORIGINS on top.
 */
export function hostPolicy(config: Config): HostPolicy {
  const names = new Set<string>()
  const authorities = new Set<string>()
  const publicOrigin = config.identity.publicUrl
  if (publicOrigin) names.add(new URL(publicOrigin).hostname)
  const listen = config.host.toLowerCase()
  if (WILDCARDS.has(listen) || isLoopbackAddress(listen)) {
    for (const n of LOOPBACK_NAMES) names.add(n)
  }
  if (!WILDCARDS.has(listen)) names.add(isIP(listen) === 6 ? `[${listen}]` : listen)
  let any = false
  for (const entry of config.allowedHosts) {
    if (entry === '*') any = true
    else if (isIP(entry) === 6) names.add(`[${entry}]`)
    else if (/:\d+$/.test(entry)) authorities.add(entry)
    else names.add(entry)
  }
  return { any, names, authorities, origins: new Set(config.allowedOrigins), publicOrigin }
}

// A Host header is an authority and nothing more: a name or an address, and an optional port.
const AUTHORITY = /^(?:[a-z0-9._-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i

function parseAuthority(host: string): URL | undefined {
  if (!AUTHORITY.test(host) || !URL.canParse(`http://${host}`)) return undefined
  return new URL(`http://${host}`)
}

/** `hostname:port`, with the scheme's default port when the URL names none. */
function hostPort(url: URL, scheme: string): string {
  return `${url.hostname}:${url.port || (scheme === 'https:' ? '443' : '80')}`
}

/**
 * MCP transports (2025-11-25, Streamable HTTP, Security Warning): servers MUST validate `Origin`
 * to prevent DNS rebinding, answering 403 when it is present and invalid. A rebinding page's
 * requests name the attacker's host in `Host`, so `Host` is checked against the allow-list too;
 * a request without `Origin` (a client outside a browser) passes on its `Host` alone. An
 * `Origin` passes when it is the hub's own (the public URL, or the same host as the request)
 * or is listed in BATON_ALLOWED_ORIGINS.
 */
export function assertAllowedHostAndOrigin(policy: HostPolicy, req: FastifyRequest): void {
  const host = req.host
  const authority = typeof host === 'string' && host !== '' ? parseAuthority(host) : undefined
  const scheme = `${req.protocol}:`
  const allowedHost =
    authority !== undefined &&
    (policy.any ||
      policy.names.has(authority.hostname) ||
      policy.authorities.has(hostPort(authority, scheme)))
  if (!allowedHost) {
    throw new BatonError('host_not_allowed', 'This hub does not serve /mcp under that host name')
  }
  const origin = req.headers.origin
  if (origin === undefined) return
  if (policy.origins.has('*')) return
  const url = URL.canParse(origin) ? new URL(origin) : undefined
  const ok =
    url !== undefined &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    (policy.origins.has(url.origin) ||
      url.origin === policy.publicOrigin ||
      hostPort(url, url.protocol) === hostPort(authority, scheme))
  if (!ok) {
    throw new BatonError('origin_not_allowed', 'Pages of this origin may not call /mcp')
  }
}
