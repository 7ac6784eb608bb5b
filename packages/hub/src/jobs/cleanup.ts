import type { Logger } from 'pino'

/** A timed job: runs `fn` every `intervalMs`, never two at once, until stopped. */
export function startPeriodic(
  name: string,
  intervalMs: number,
  fn: () => Promise<unknown>,
  log: Logger,
): { stop(): Promise<void>; runNow(): Promise<void> } {
  let running: Promise<void> | undefined
  const tick = () => {
    if (running) return running
    running = fn()
      .then((result) => {
        if (typeof result === 'number' && result > 0)
          log.info({ job: name, removed: result }, 'job')
      })
      .catch((err) => log.warn({ job: name, err }, 'job failed'))
      .finally(() => {
        running = undefined
      })
    return running
  }
  const timer = setInterval(tick, intervalMs)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
    runNow: () => tick(),
  }
}
