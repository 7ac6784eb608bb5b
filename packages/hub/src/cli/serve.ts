import { parseArgs } from 'node:util'
import { ENV_DOC, loadConfig } from '../config.js'
import { startHub } from '../hub.js'
import { type Io, UsageError } from './io.js'

const USAGE = `baton serve [--host H] [--port P] [--data-dir D] [--database-url URL] [--log-level L] [--trust-proxy T]

Runs the hub. Flags override the environment:
${Object.entries(ENV_DOC)
  .map(([k, v]) => `  ${k.padEnd(32)} ${v}`)
  .join('\n')}`

/** `baton serve`: runs the hub until SIGINT or SIGTERM, then shuts down gracefully. */
export async function serveCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      'log-level': { type: 'string' },
      'trust-proxy': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(USAGE)
    return 0
  }
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(process.env, values as Record<string, string>)
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
  const hub = await startHub(config)
  hub.ctx.log.info({ url: hub.url, store: hub.ctx.database.caps.name }, 'hub listening')
  if (config.identity.adminToken) {
    hub.ctx.log.info(
      { dashboard: `${hub.url}/dashboard/`, signIn: 'with the BATON_ADMIN_TOKEN value' },
      'dashboard on',
    )
  } else {
    hub.ctx.log.info(
      {
        dashboard: 'off',
        turnOn:
          'set BATON_ADMIN_TOKEN (32+ characters) and restart, or run baton dev for a first look',
      },
      'dashboard off',
    )
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      hub.ctx.log.info({ signal }, 'shutting down')
      void hub.stop().then(resolve)
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  hub.ctx.log.info('stopped')
  return 0
}
