// A built hub as its own process (`baton serve`), and what the benches that watch its main thread
// need around it: plain HTTP requests on keep-alive connections, signed ones, the main thread's
// CPU from /proc, and /healthz probes while load runs. Not a scenario (it exports no `run`).
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { contentDigest, defaultComponents, type Identity, signMessage } from '@baton/client'

const TICK_MS = 1000 / 100 // USER_HZ: /proc reports CPU time in ticks of 10 ms

/** How often /healthz is probed while load runs, in ms. */
export const PROBE_EVERY_MS = 25

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** The CPU time of a process's main thread so far, in ms. */
export function mainThreadCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')
  // Fields after the command name (which is in parentheses and may hold spaces): utime is the
  // 14th field of the line, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

/** One answer: its status, its error code if any, its time, and its body's size. */
export interface Answer {
  status: number
  code?: string
  ms: number
  bytes: number
  body?: unknown
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** Closes the keep-alive connections; for the end of a bench. */
export function closeConnections(): void {
  agent.destroy()
}

/** Sends one request and reads its whole answer, parsing a JSON body when `parse` is set. */
export function send(
  port: number,
  method: string,
  p: string,
  body?: Buffer,
  headers: Record<string, string> = {},
  parse = false,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path: p,
        headers: {
          ...(body ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const ms = performance.now() - started
          const raw = Buffer.concat(chunks)
          let json: unknown
          try {
            json = JSON.parse(raw.toString('utf8'))
          } catch {}
          const code =
            (json as { code?: string } | undefined)?.code ??
            (json as { error?: { data?: { code?: string } } } | undefined)?.error?.data?.code
          resolve({
            status: res.statusCode ?? 0,
            ...(typeof code === 'string' ? { code } : {}),
            ms,
            bytes: raw.length,
            ...(parse ? { body: json } : {}),
          })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** Headers that sign one request whose body's Content-Digest is `digest` (none: no body). */
export function signedHeaders(
  port: number,
  id: Identity,
  method: string,
  p: string,
  digest?: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(digest ? { 'content-type': 'application/json', 'content-digest': digest } : {}),
  }
  const signed = signMessage(
    { method, targetUri: `http://127.0.0.1:${port}${p}`, headers },
    {
      privateKey: id.privateKey,
      keyid: id.principal,
      components: defaultComponents(digest !== undefined, headers),
    },
  )
  return {
    ...headers,
    ...extra,
    'signature-input': signed.signatureInput,
    signature: signed.signature,
  }
}

/** Sends one signed JSON request as `id`. */
export function sendSigned(
  port: number,
  id: Identity,
  method: string,
  p: string,
  body?: unknown,
  extra: Record<string, string> = {},
  parse = false,
): Promise<Answer> {
  const bytes = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const digest = bytes ? contentDigest(bytes) : undefined
  return send(port, method, p, bytes, signedHeaders(port, id, method, p, digest, extra), parse)
}

/** A hub process on loopback with a throwaway data folder, and how to stop it. */
export interface HubProcess {
  child: ChildProcess
  port: number
  dir: string
  stop(): Promise<void>
}

/** Starts `baton serve` from the build, open admission and quotas out of the way, plus `env`. */
export async function startHubProcess(
  name: string,
  env: Record<string, string> = {},
): Promise<HubProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), `baton-bench-${name}-`))
  const port = await freePort()
  const bin = fileURLToPath(new URL('../packages/hub/bin/baton.mjs', import.meta.url))
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      BATON_HOST: '127.0.0.1',
      BATON_PORT: String(port),
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'open',
      BATON_QUOTA_REQUESTS_PER_DAY: String(1e9),
      BATON_HANDOFF_DAILY_QUOTA: String(1e9),
      BATON_LOG_LEVEL: 'silent',
      BATON_COMPUTE_EMBEDDED: 'false',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (let i = 0; ; i++) {
    try {
      if ((await send(port, 'GET', '/healthz')).status === 200) break
    } catch {}
    if (i > 200) throw new Error('the hub did not start')
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    child,
    port,
    dir,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** Probes /healthz every PROBE_EVERY_MS until `until` settles; answers the latencies, sorted. */
export async function probe(port: number, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = []
  let done = false
  void until.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  while (!done) {
    const started = performance.now()
    latencies.push((await send(port, 'GET', '/healthz')).ms)
    const rest = PROBE_EVERY_MS - (performance.now() - started)
    if (rest > 0) await new Promise((r) => setTimeout(r, rest))
  }
  return latencies.sort((a, b) => a - b)
}
