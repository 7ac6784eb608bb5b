import { once } from 'node:events'
import net from 'node:net'

/** What a raw connection saw: the status the hub answered (if any) and how much was sent. */
export interface WireOutcome {
  status: number | undefined
  /** The answer as received, header section and body. */
  text: string
  /** Body bytes the client managed to hand to the socket before the answer or the close. */
  sent: number
  /** True when the hub closed the connection. */
  closed: boolean
}

/** Opens a raw TCP connection to a hub URL. */
export async function connect(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url)
  const socket = net.connect(Number(port), hostname)
  await once(socket, 'connect')
  return socket
}

/** The status code of a raw HTTP/1.1 answer, once its status line has arrived. */
export function statusOf(text: string): number | undefined {
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(text)
  return m ? Number(m[1]) : undefined
}

/**
 * Sends a header section, then up to `bodyBytes` of body in chunks, stopping as soon as the hub
 * answers or closes; answers what happened. The body is junk unless `chunk` is given.
 */
export async function sendRequest(
  url: string,
  head: string,
  bodyBytes: number,
  chunk: Buffer = Buffer.alloc(64 * 1024, 0x61),
): Promise<WireOutcome> {
  const socket = await connect(url)
  let text = ''
  let closed = false
  let answered = false
  const gone = new Promise<void>((resolve) => {
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1')
      if (statusOf(text) !== undefined) answered = true
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      closed = true
      resolve()
    })
  })
  socket.write(head)
  let sent = 0
  while (sent < bodyBytes && !answered && !closed) {
    const piece = chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent))
    sent += piece.length
    if (!socket.write(piece)) {
      await Promise.race([once(socket, 'drain').catch(() => {}), gone])
    }
  }
  // Give the answer (or the close) a moment to arrive once everything is written.
  if (!answered && !closed) await Promise.race([gone, waitFor(() => answered, 30_000)])
  const status = statusOf(text)
  socket.destroy()
  return { status, text, sent, closed }
}

/** Resolves once `ok()` holds, polling, or after `timeoutMs` whatever it says. */
export async function waitFor(ok: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!ok() && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
}

/** Resolves true once the socket is closed by the other side, false if `boundMs` passes first. */
export function closedWithin(socket: net.Socket, boundMs: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), boundMs)
    socket.on('error', () => {})
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}
