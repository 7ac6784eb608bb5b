import { BlockList, isIP, type Server, type Socket } from 'node:net'
import type { Config } from '../config.js'

/**
 * The peers a connection cap does not count: trusted proxies carry many clients on one
 * connection address, so the cap belongs to the proxy in front. `true` or a hop count trusts
 * every peer; a list trusts those addresses and CIDR ranges.
 */
function trustedPeers(trustProxy: Config['trustProxy']): (address: string) => boolean {
  if (trustProxy === false) return () => false
  if (trustProxy === true || typeof trustProxy === 'number') return () => true
  const list = new BlockList()
  for (const entry of trustProxy) {
    const [address, bits] = entry.split('/') as [string, string | undefined]
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (isIP(address) === 0) continue
    if (bits === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(bits), family)
  }
  return (address) => {
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
    if (v4) return list.check(v4[1]!, 'ipv4')
    return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
  }
}

/**
 * Caps the connections one client address holds open at once, counted as they are accepted:
 * the one over the cap is closed before a byte of it is read, so a client cannot pile up
 * connections (slow or idle) to starve others. 0 turns the cap off.
 */
export function capConnectionsPerAddress(
  server: Server,
  max: number,
  trustProxy: Config['trustProxy'],
  onRefused: () => void = () => {},
): void {
  if (max <= 0) return
  const trusted = trustedPeers(trustProxy)
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined || trusted(address)) return
    const count = (open.get(address) ?? 0) + 1
    if (count > max) {
      onRefused()
      socket.destroy()
      return
    }
    open.set(address, count)
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1
      if (left <= 0) open.delete(address)
      else open.set(address, left)
    })
  })
}
