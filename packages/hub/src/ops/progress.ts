import type { Caller } from './operation.js'

/**
 * Reports progress every `everyMs` while `work` runs, as elapsed seconds of `totalSeconds`, so
 * an MCP client waiting on a long poll sees it alive (and can reset its own request timeout).
 */
export async function withProgress<T>(
  caller: Pick<Caller, 'progress'>,
  totalSeconds: number,
  work: Promise<T>,
  everyMs = 5000,
): Promise<T> {
  const report = caller.progress
  if (!report || totalSeconds <= 0) return work
  const started = Date.now()
  report({ progress: 0, total: totalSeconds, message: 'waiting for a change' })
  const timer = setInterval(() => {
    const elapsed = Math.min(totalSeconds, Math.floor((Date.now() - started) / 1000))
    report({ progress: elapsed, total: totalSeconds, message: 'waiting for a change' })
  }, everyMs)
  try {
    return await work
  } finally {
    clearInterval(timer)
  }
}
