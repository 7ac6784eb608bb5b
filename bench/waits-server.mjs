// The servers of bench/waits.ts, one per child process, in plain JavaScript so they run under
// bare `node` with no loader: the hub is the built one (packages/hub/dist, what `baton serve`
// runs) and the bare fastify wait server runs the same way, so neither pays for a loader the
// other does not. Started by the bench as `node bench/waits-server.mjs <bare|hub> <store>`; it
// reports its port over IPC, then answers `waiting`, `memory`, `snapshot` (a heap snapshot, to see
// what a wait holds) and `stop`.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import v8 from 'node:v8'
import vm from 'node:vm'

const env = process.env
const WAITERS = Number(env.BENCH_WAITERS || 10_000)
const WAIT_SECONDS = Number(env.BENCH_WAIT_SECONDS || 600)

/** The bare wait server: parked replies per topic, answered by `POST /move/:topic`. */
async function serveBare() {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ logger: false })
  const parked = new Map()
  const versions = new Map()
  let waiting = 0
  app.get('/wait/:topic', (req, reply) => {
    const { topic } = req.params
    let set = parked.get(topic)
    if (!set) {
      set = new Set()
      parked.set(topic, set)
    }
    const entry = { send: (body) => reply.send(body) }
    set.add(entry)
    waiting++
    reply.raw.once('close', () => {
      if (set.delete(entry)) waiting--
    })
  })
  app.post('/move/:topic', async (req) => {
    const { topic } = req.params
    const version = (versions.get(topic) ?? 1) + 1
    versions.set(topic, version)
    const set = parked.get(topic)
    parked.delete(topic)
    for (const entry of set ?? []) {
      waiting--
      entry.send({ topic, version, changed: true })
    }
    return { topic, version }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { port: app.server.address().port, waiting: () => waiting, stop: () => app.close() }
}

/** The built hub, configured as a bench hub, on SQLite or on a fresh PostgreSQL database. */
async function serveHub(store) {
  // BENCH_WAITS_HUB: the entry of another build to measure beside this one (the bench's `other`).
  const { loadConfig, startHub } = await import(env.BENCH_WAITS_HUB || '@baton/hub')
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-bench-waits-'))
  let dropDb
  let url
  if (store === 'postgres') {
    const base = env.BENCH_PG_URL ?? env.DATABASE_URL
    if (!base) throw new Error('postgres needs BENCH_PG_URL or DATABASE_URL')
    const { default: pg } = await import('pg')
    const name = `bench_waits_${randomBytes(6).toString('hex')}`
    const admin = new pg.Client({ connectionString: base })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    const u = new URL(base)
    u.pathname = `/${name}`
    url = u.toString()
    dropDb = async () => {
      const c = new pg.Client({ connectionString: base })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    }
  }
  const hub = await startHub(
    loadConfig({
      // The embedded compute runtime is not what this measures by default (BATON_COMPUTE_EMBEDDED
      // =true measures a default hub's).
      BATON_COMPUTE_EMBEDDED: 'false',
      // BATON_* settings of the bench's environment pass through (e.g. to compare a setting).
      ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('BATON_'))),
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: path.join(dir, 'hub'),
      BATON_LOG_LEVEL: 'silent',
      BATON_HANDOFF_DAILY_QUOTA: '1000000000',
      BATON_WAIT_MAX_PER_TOPIC: String(WAITERS),
      BATON_WAIT_MAX_PER_ADDRESS: String(WAITERS + 100),
      BATON_MAX_CONNECTIONS_PER_ADDRESS: '0',
      // Opening 10,000 waits takes a while on a loaded machine; none may time out before the move.
      BATON_HANDOFF_MAX_WAIT_SECONDS: String(WAIT_SECONDS),
      ...(url
        ? { DATABASE_URL: url, BATON_HUB_KEY_SECRET: 'the hub key secret of bench hubs' }
        : {}),
    }),
  )
  return {
    port: Number(new URL(hub.url).port),
    waiting: () => hub.ctx.waits.waiting,
    stop: async () => {
      await hub.stop()
      await dropDb?.()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

// The collector, reached without a command-line flag: plain `node`, as a user runs the hub.
v8.setFlagsFromString('--expose-gc')
const collect = vm.runInNewContext('gc')

const [kind, store = 'sqlite'] = process.argv.slice(2)
const server = kind === 'bare' ? await serveBare() : await serveHub(store)
process.on('message', (msg) => {
  if (msg.cmd === 'waiting') process.send?.({ waiting: server.waiting() })
  else if (msg.cmd === 'memory') {
    // After a full collection, so the heap is what the waits hold, not garbage not yet collected.
    collect()
    const { heapUsed, external, arrayBuffers } = process.memoryUsage()
    process.send?.({ heapUsed, external, arrayBuffers })
  } else if (msg.cmd === 'snapshot') process.send?.({ file: v8.writeHeapSnapshot(msg.file) })
  else if (msg.cmd === 'stop') void server.stop().then(() => process.exit(0))
})
process.send?.({ port: server.port })
