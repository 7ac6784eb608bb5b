// The body of a compute worker thread: evaluates one json-expr-v1 program per message. The pool
// owns wall time and memory (it ends this thread on overrun); everything else is counted here.
import { parentPort } from 'node:worker_threads'
import { BatonError } from '@baton/protocol'
import { evaluateJsonExpr } from './json-expr.js'
import type { ComputeLimits } from './limits.js'

/** One evaluation, as the pool posts it: program and input travel as JSON text. */
export interface WorkerRequest {
  id: number
  program: string
  input: string
  limits: ComputeLimits
}

/** A worker's answer to one request; `ready` is sent once, when the thread can take work. */
export type WorkerAnswer =
  | { ready: true }
  | { id: number; ok: true; outputText: string; steps: number }
  | { id: number; ok: false; code: string; message: string; context: Record<string, unknown> }

const port = parentPort
if (port) {
  port.on('message', (req: WorkerRequest) => {
    let answer: WorkerAnswer
    try {
      const r = evaluateJsonExpr(JSON.parse(req.program), JSON.parse(req.input), req.limits)
      answer = { id: req.id, ok: true, outputText: r.outputText, steps: r.steps }
    } catch (error) {
      answer =
        error instanceof BatonError
          ? {
              id: req.id,
              ok: false,
              code: error.code,
              message: error.message,
              context: error.context,
            }
          : { id: req.id, ok: false, code: 'internal', message: 'Evaluation failed', context: {} }
    }
    port.postMessage(answer)
  })
  port.postMessage({ ready: true } satisfies WorkerAnswer)
}
