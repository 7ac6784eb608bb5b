import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { type AppContext, createApp } from './app.js'
import type { Clock } from './clock.js'
import type { Config } from './config.js'
import { buildServer } from './http/server.js'
import { isLoopback } from './identity/http.js'

/** A running hub: its address, its context, and a graceful stop. */
export interface RunningHub {
  url: string
  ctx: AppContext
  app: FastifyInstance
  /** Graceful: answers waiters, finishes in-flight requests, commits queued writes, closes. */
  stop(): Promise<void>
}

/** Starts a hub listening on the configured host and port. */
export async function startHub(
  config: Config,
  opts: {
    clock?: Clock
    log?: Logger
    /** Adds routes before the hub listens (`baton dev` adds its one-time sign-in link). */
    extend?: (app: FastifyInstance, ctx: AppContext) => void
  } = {},
): Promise<RunningHub> {
  const ctx = await createApp(config, opts)
  const app = await buildServer(ctx)
  opts.extend?.(app, ctx)
  await app.listen({ host: config.host, port: config.port })
  const addr = app.server.address()
  const port = typeof addr === 'object' && addr ? addr.port : config.port
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  // Without a public URL, @authority is bound to the listen address: clients elsewhere must
  // reach the hub by exactly that address (discovery tells them), and a proxy's cannot be known.
  if (!config.identity.publicUrl && (!isLoopback(config.host) || config.trustProxy !== false)) {
    ctx.log.warn(
      { host: config.host, port, trustProxy: config.trustProxy !== false },
      'BATON_PUBLIC_URL is unset: signed requests are accepted only for the listen address; set it to the origin clients use',
    )
  }
  let stopping: Promise<void> | undefined
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    ctx,
    app,
    stop() {
      stopping ??= (async () => {
        ctx.beginShutdown()
        const grace = setTimeout(() => app.server.closeAllConnections(), config.shutdownGraceMs)
        await app.close()
        clearTimeout(grace)
        await ctx.close()
      })()
      return stopping
    },
  }
}
