// The body of a compute worker thread: evaluates one json-expr-v1 program per message. The pool
// owns wall time and memory (it ends this thread on overrun); everything else is counted here.
import { parentPort, workerData } from 'node:worker_threads'
import { BatonError } from '@baton/protocol'
import { compileJsonExpr, runCompiled, withSteps } from './json-expr.js'
import type { ComputeLimits } from './limits.js'

/** One evaluation, as the pool posts it: program and input travel as JSON text. */
export interface WorkerRequest {
  id: number
  program: string
  input: string
  limits: ComputeLimits
}

/**
 * What the pool passes at the worker's start: a shared cell where the running evaluation writes
 * its step count, which the pool reads when it ends the worker (wall time, heap).
 */
export interface WorkerData {
  progress: SharedArrayBuffer
}

/** A worker's answer to one request; `ready` is sent once, when the thread can take work. */
export type WorkerAnswer =
  | { ready: true }
  | { id: number; ok: true; outputText: string; steps: number }
  | { id: number; ok: false; code: string; message: string; context: Record<string, unknown> }

const port = parentPort
if (port) {
  const shared = (workerData as WorkerData | undefined)?.progress
  const progress = shared ? new Float64Array(shared) : undefined
  port.on('message', (req: WorkerRequest) => {
    let answer: WorkerAnswer
    if (progress) progress[0] = 0
    try {
      const compiled = compileJsonExpr(JSON.parse(req.program), req.limits)
      const r = runCompiled(compiled, JSON.parse(req.input), progress ? { progress } : {})
      answer = { id: req.id, ok: true, outputText: r.outputText, steps: r.steps }
    } catch (thrown) {
      const error = withSteps(thrown, 0)
      answer =
        error instanceof BatonError
          ? {
              id: req.id,
              ok: false,
              code: error.code,
              message: error.message,
              context: error.context,
            }
          : {
              id: req.id,
              ok: false,
              code: 'internal',
              message: 'Evaluation failed',
              context: { steps: progress?.[0] ?? 0 },
            }
    }
    port.postMessage(answer)
  })
  port.postMessage({ ready: true } satisfies WorkerAnswer)
}
