import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import {
  IPV4_SPECIAL,
  IPV6_GLOBAL_UNICAST,
  IPV6_SPECIAL,
  SPECIAL_DOMAINS,
  type SpecialBlock,
} from './special-purpose.js'

/**
 * Server-side request forgery guards for URLs the hub itself fetches (notify_url): which
 * addresses are public, which URLs may be stored, and a resolver that checks every answer.
 */

function parseIPv4(address: string): bigint {
  return address.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n)
}

function parseIPv6(address: string): bigint {
  let text = address.toLowerCase()
  // A trailing dotted quad stands for the last 32 bits (RFC 4291 §2.2).
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (quad) {
    const v4 = parseIPv4(quad[1]!)
    text = `${text.slice(0, quad.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return groups.reduce((n, g) => (n << 16n) | BigInt(Number.parseInt(g, 16)), 0n)
}

interface Block extends SpecialBlock {
  bits: 32 | 128
  base: bigint
}

const compile = (b: SpecialBlock, bits: 32 | 128): Block => {
  const value = bits === 32 ? parseIPv4(b.prefix) : parseIPv6(b.prefix)
  const shift = BigInt(bits - b.length)
  return { ...b, bits, base: (value >> shift) << shift }
}

const v4Blocks = IPV4_SPECIAL.map((b) => compile(b, 32))
// Most specific first, so an embedding block (6to4 inside global unicast) is found before others.
const v6Blocks = IPV6_SPECIAL.map((b) => compile(b, 128)).sort((a, b) => b.length - a.length)
const v6Global = compile(IPV6_GLOBAL_UNICAST, 128)

const within = (value: bigint, b: Block) =>
  value >> BigInt(b.bits - b.length) === b.base >> BigInt(b.bits - b.length)

/** Why an address is not public: the registry block it falls in, or undefined when it is public. */
export function specialBlockOf(address: string): SpecialBlock | undefined {
  const family = isIP(address)
  if (family === 4) {
    const value = parseIPv4(address)
    return v4Blocks.find((b) => within(value, b))
  }
  if (family !== 6) return { prefix: address, length: 0, name: 'not an address', source: '' }
  // A zone index (fe80::1%eth0) names an interface of this host: never public.
  if (address.includes('%')) return v6Blocks.find((b) => b.name === 'link-local')
  const value = parseIPv6(address)
  const block = v6Blocks.find((b) => within(value, b))
  if (block?.embeds !== undefined) {
    const v4 = (value >> BigInt(128 - block.embeds - 32)) & 0xffff_ffffn
    const dotted = [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join('.')
    return specialBlockOf(dotted) ? block : undefined
  }
  if (block) return block
  if (!within(value, v6Global)) {
    return { prefix: '::', length: 0, name: 'outside global unicast', source: 'RFC 4291' }
  }
  return undefined
}

/** Whether an address is plain loopback (127.0.0.0/8 or ::1), which tests may be allowed to reach. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return address.split('.')[0] === '127'
  return family === 6 && !address.includes('%') && parseIPv6(address) === 1n
}

/** Whether the hub may connect to `address`: public, or loopback when that is allowed. */
export function isPublicAddress(address: string, allowLoopback = false): boolean {
  if (allowLoopback && isLoopbackAddress(address)) return true
  return specialBlockOf(address) === undefined
}

/** Why a URL may not be fetched; `undefined` when it may. */
export type UrlRefusal =
  | 'not_absolute'
  | 'scheme'
  | 'credentials'
  | 'no_host'
  | 'special_address'
  | 'special_name'
  | 'trailing_dot'

/**
 * Checks a URL the hub will later POST to: absolute http(s), a host, no credentials, no literal
 * special-purpose address (the WHATWG parser has already turned `2130706433`, `0x7f.1` and
 * `0177.0.0.1` into dotted quads), and no special-use or trailing-dot name.
 */
export function checkFetchUrl(
  raw: string,
  allowLoopback = false,
): { ok: true; url: URL } | { ok: false; reason: UrlRefusal } {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, reason: 'not_absolute' }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'scheme' }
  if (url.username || url.password) return { ok: false, reason: 'credentials' }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!host) return { ok: false, reason: 'no_host' }
  if (isIP(host)) {
    return isPublicAddress(host, allowLoopback)
      ? { ok: true, url }
      : { ok: false, reason: 'special_address' }
  }
  // `localhost.` and friends resolve like the name without the dot, past any name check.
  if (host.endsWith('.')) return { ok: false, reason: 'trailing_dot' }
  const name = host.toLowerCase()
  if (allowLoopback && (name === 'localhost' || name.endsWith('.localhost')))
    return { ok: true, url }
  if (SPECIAL_DOMAINS.some((d) => name === d || name.endsWith(`.${d}`))) {
    return { ok: false, reason: 'special_name' }
  }
  return { ok: true, url }
}

/** One checked address to connect to. */
export interface CheckedAddress {
  address: string
  family: number
}

/**
 * Resolves a URL's host with every answer (`dns.lookup` with `all`) and answers the first one,
 * or `undefined` when any answer is not public: a name that resolves to one private address
 * among public ones is refused whole, and the caller connects to the address answered here so a
 * second, rebinding answer is never used.
 */
export async function resolvePublic(
  url: URL,
  allowLoopback = false,
  resolve: (host: string) => Promise<CheckedAddress[]> = (host) =>
    lookup(host, { all: true, verbatim: true }),
): Promise<CheckedAddress | undefined> {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const family = isIP(host)
  const answers = family ? [{ address: host, family }] : await resolve(host)
  if (answers.length === 0) return undefined
  if (!answers.every((a) => isPublicAddress(a.address, allowLoopback))) return undefined
  return answers[0]
}
