/**
 * The IANA special-purpose address registries (IPv4 and IPv6, as of RFC 6890 and its updates),
 * the multicast blocks, and the special-use domain names, as data. `embeds` marks a block whose
 * addresses carry an IPv4 address at a fixed bit offset: such an address is judged by the IPv4
 * address it carries, never allowed on its own.
 */
export interface SpecialBlock {
  prefix: string
  length: number
  name: string
  source: string
  /** Bit offset of an embedded IPv4 address, counted from the most significant bit. */
  embeds?: number
}

export const IPV4_SPECIAL: readonly SpecialBlock[] = [
  { prefix: '0.0.0.0', length: 8, name: 'this network', source: 'RFC 791' },
  { prefix: '10.0.0.0', length: 8, name: 'private-use', source: 'RFC 1918' },
  { prefix: '100.64.0.0', length: 10, name: 'shared address space (CGNAT)', source: 'RFC 6598' },
  { prefix: '127.0.0.0', length: 8, name: 'loopback', source: 'RFC 1122' },
  { prefix: '169.254.0.0', length: 16, name: 'link-local', source: 'RFC 3927' },
  { prefix: '172.16.0.0', length: 12, name: 'private-use', source: 'RFC 1918' },
  { prefix: '192.0.0.0', length: 24, name: 'IETF protocol assignments', source: 'RFC 6890' },
  { prefix: '192.0.2.0', length: 24, name: 'documentation (TEST-NET-1)', source: 'RFC 5737' },
  { prefix: '192.31.196.0', length: 24, name: 'AS112-v4', source: 'RFC 7535' },
  { prefix: '192.52.193.0', length: 24, name: 'AMT', source: 'RFC 7450' },
  { prefix: '192.88.99.0', length: 24, name: 'deprecated 6to4 relay anycast', source: 'RFC 7526' },
  { prefix: '192.168.0.0', length: 16, name: 'private-use', source: 'RFC 1918' },
  { prefix: '192.175.48.0', length: 24, name: 'direct delegation AS112', source: 'RFC 7534' },
  { prefix: '198.18.0.0', length: 15, name: 'benchmarking', source: 'RFC 2544' },
  { prefix: '198.51.100.0', length: 24, name: 'documentation (TEST-NET-2)', source: 'RFC 5737' },
  { prefix: '203.0.113.0', length: 24, name: 'documentation (TEST-NET-3)', source: 'RFC 5737' },
  { prefix: '224.0.0.0', length: 4, name: 'multicast', source: 'RFC 5771' },
  { prefix: '240.0.0.0', length: 4, name: 'reserved', source: 'RFC 1112' },
  { prefix: '255.255.255.255', length: 32, name: 'limited broadcast', source: 'RFC 919' },
]

/** Only global unicast (2000::/3) can be a public IPv6 address; every other block is refused. */
export const IPV6_GLOBAL_UNICAST: SpecialBlock = {
  prefix: '2000::',
  length: 3,
  name: 'global unicast',
  source: 'RFC 4291',
}

export const IPV6_SPECIAL: readonly SpecialBlock[] = [
  { prefix: '::', length: 128, name: 'unspecified', source: 'RFC 4291' },
  { prefix: '::1', length: 128, name: 'loopback', source: 'RFC 4291' },
  { prefix: '::', length: 96, name: 'IPv4-compatible (deprecated)', source: 'RFC 4291' },
  {
    prefix: '::ffff:0:0',
    length: 96,
    name: 'IPv4-mapped',
    source: 'RFC 4291',
    embeds: 96,
  },
  {
    prefix: '::ffff:0:0:0',
    length: 96,
    name: 'IPv4-translated',
    source: 'RFC 2765',
    embeds: 96,
  },
  { prefix: '64:ff9b::', length: 96, name: 'NAT64 well-known', source: 'RFC 6052', embeds: 96 },
  { prefix: '64:ff9b:1::', length: 48, name: 'NAT64 local-use', source: 'RFC 8215' },
  { prefix: '100::', length: 64, name: 'discard-only', source: 'RFC 6666' },
  { prefix: '100:0:0:1::', length: 64, name: 'dummy prefix', source: 'RFC 9780' },
  { prefix: '2001::', length: 23, name: 'IETF protocol assignments', source: 'RFC 2928' },
  { prefix: '2001::', length: 32, name: 'Teredo', source: 'RFC 4380' },
  { prefix: '2001:2::', length: 48, name: 'benchmarking', source: 'RFC 5180' },
  { prefix: '2001:10::', length: 28, name: 'ORCHID (deprecated)', source: 'RFC 4843' },
  { prefix: '2001:20::', length: 28, name: 'ORCHIDv2', source: 'RFC 7343' },
  { prefix: '2001:db8::', length: 32, name: 'documentation', source: 'RFC 3849' },
  { prefix: '2002::', length: 16, name: '6to4', source: 'RFC 3056', embeds: 16 },
  { prefix: '2620:4f:8000::', length: 48, name: 'direct delegation AS112', source: 'RFC 7534' },
  { prefix: '3fff::', length: 20, name: 'documentation', source: 'RFC 9637' },
  { prefix: '5f00::', length: 16, name: 'SRv6 SIDs', source: 'RFC 9602' },
  { prefix: 'fc00::', length: 7, name: 'unique local', source: 'RFC 4193' },
  { prefix: 'fe80::', length: 10, name: 'link-local', source: 'RFC 4291' },
  { prefix: 'fec0::', length: 10, name: 'site-local (deprecated)', source: 'RFC 3879' },
  { prefix: 'ff00::', length: 8, name: 'multicast', source: 'RFC 4291' },
]

/**
 * Special-use domain names (RFC 6761 and its registry, RFC 6762, RFC 7686, RFC 8375, RFC 9476)
 * and the reserved `internal` top-level name: a name equal to one, or under one, is refused.
 */
export const SPECIAL_DOMAINS: readonly string[] = [
  'localhost',
  'localdomain',
  'local',
  'invalid',
  'test',
  'example',
  'onion',
  'alt',
  'internal',
  'home.arpa',
  'in-addr.arpa',
  'ip6.arpa',
]
