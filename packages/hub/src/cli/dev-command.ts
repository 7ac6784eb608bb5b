import { randomBytes, timingSafeEqual } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../config.js'
import { startHub } from '../hub.js'
import { SESSION_COOKIE, SESSION_TTL_MS, SessionKeeper } from '../web/session.js'
import { type Io, UsageError } from './io.js'

const USAGE = `baton dev [--port P] [--data-dir D]

A hub for a first look: SQLite in a throwaway data directory of its own (a fresh temporary folder,
removed when it stops; never ./data, so nothing made here reaches a hub run with baton serve or
npm start), open admission (every new agent is approved at once), a fresh admin token, and a
dashboard link that signs you in once. --data-dir D keeps the data in D instead, and leaves it.
Never for production: anyone who can reach the port can enrol.`

/** The path of the one-time sign-in link; the code is random and held only by this process. */
const SIGNIN_PATH = '/dashboard/dev-signin/'

/**
 * A link that signs a browser in to the dashboard once, without the admin token in the URL: the
 * code is consumed on first use and answered with the same session cookie the sign-in form sets.
 */
function oneTimeSignIn(app: FastifyInstance, adminToken: string, now: () => number): string {
  const code = randomBytes(24).toString('base64url')
  const keeper = new SessionKeeper(adminToken)
  let used = false
  app.get(`${SIGNIN_PATH}:code`, async (req, reply) => {
    const given = Buffer.from(String((req.params as { code?: string }).code ?? ''))
    const expected = Buffer.from(code)
    const valid = given.length === expected.length && timingSafeEqual(given, expected)
    reply.header('cache-control', 'no-store')
    // Without a session the dashboard then says why the link did not sign this browser in.
    if (!valid || used) {
      return reply
        .code(303)
        .header('location', `/dashboard/?link=${valid ? 'used' : 'invalid'}`)
        .send()
    }
    used = true
    const { cookie } = keeper.issue(now())
    reply.header(
      'set-cookie',
      `${SESSION_COOKIE}=${cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}`,
    )
    return reply.code(303).header('location', '/dashboard/').send()
  })
  return code
}

/** `baton dev`: a hub for a first look, with the dashboard signed in by one link. */
export async function devCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(USAGE)
    return 0
  }
  const adminToken = randomBytes(32).toString('base64url')
  // Open admission approves every key that enrols: on the data of a real hub those approvals
  // (and the handoffs made here) would outlive the session, so dev keeps its own unless told.
  const kept = values['data-dir']
  const dataDir = kept ? path.resolve(kept) : mkdtempSync(path.join(tmpdir(), 'baton-dev-'))
  const removeData = () => {
    if (!kept) rmSync(dataDir, { recursive: true, force: true })
  }
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(
      {
        ...process.env,
        DATABASE_URL: '',
        BATON_DATA_DIR: dataDir,
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: adminToken,
        BATON_LOG_LEVEL: process.env.BATON_LOG_LEVEL || 'warn',
      },
      {
        ...(values.port ? { port: values.port } : {}),
      },
    )
  } catch (e) {
    removeData()
    throw new UsageError((e as Error).message)
  }
  let code = ''
  let hub: Awaited<ReturnType<typeof startHub>>
  try {
    hub = await startHub(config, {
      extend: (app, ctx) => {
        code = oneTimeSignIn(app, adminToken, () => ctx.clock.now())
      },
    })
  } catch (error) {
    removeData()
    throw error
  }
  io.stdout(
    [
      `Baton dev hub on ${hub.url} (open admission: every new agent is approved at once)`,
      '',
      `  dashboard     ${hub.url}${SIGNIN_PATH}${code}`,
      '                (signs one browser in, once; later sign in with the admin token)',
      `  admin token   ${adminToken}`,
      `  discovery     ${hub.url}/.well-known/agent-net`,
      `  MCP (HTTP)    ${hub.url}/mcp   (Streamable HTTP)`,
      `  MCP (stdio)   baton mcp --hub ${hub.url}`,
      kept
        ? `  data          ${dataDir} (SQLite, kept; delete it to start afresh)`
        : `  data          ${dataDir} (SQLite, throwaway: removed when this hub stops)`,
      '',
      'Ctrl-C stops the hub.',
    ].join('\n'),
  )
  await new Promise<void>((resolve) => {
    const stop = () => void hub.stop().then(resolve)
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  removeData()
  return 0
}
