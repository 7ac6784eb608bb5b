// A small pool of worker threads for json-expr-v1. Each worker runs under a V8 heap limit
// (`resourceLimits`), and an evaluation that runs past its wall time is ended by terminating its
// worker; a worker that is ended or dies is replaced, so one hostile program costs one restart.
// A lazy pool (`idleMs`) starts its threads for the first evaluation and ends them once idle, so
// a hub that runs no compute holds no worker heaps.
import os from 'node:os'
import { Worker } from 'node:worker_threads'
import { BatonError, type ErrorCode, isErrorCode } from '@baton/protocol'
import {
  checkJsonInput,
  compileJsonExpr,
  type Evaluation,
  type JsonValue,
  withSteps,
} from './json-expr.js'
import {
  type ComputeLimits,
  resolveComputeLimits,
  resolveWorkerLimits,
  type WorkerLimits,
} from './limits.js'
import type { WorkerAnswer, WorkerData, WorkerRequest } from './worker.js'

/** How a pool is built; every bound has a default (see limits.ts). */
export interface ComputePoolOptions {
  /** Worker threads (default: 2, or 1 on a single core). */
  size?: number
  /** Evaluations that may wait for a worker before `compute_busy` (default 256). */
  maxQueue?: number
  /** Default evaluator bounds of every evaluation. */
  limits?: Partial<ComputeLimits>
  /** Wall time per evaluation and heap per worker. */
  worker?: Partial<WorkerLimits>
  /** The worker's module (default: the evaluator's); tests point it at one that cannot start. */
  entry?: URL
  /**
   * When set, workers start on the first evaluation (or `ready()`) instead of at creation, and
   * end after this many milliseconds with no evaluation running or waiting.
   */
  idleMs?: number
  /** Schedules the idle check; tests pass their own to run it without waiting. */
  schedule?: (run: () => void, ms: number) => () => void
}

/** Per-evaluation overrides of the pool's bounds (the heap is per worker, so it stays fixed). */
export interface EvaluateOptions {
  limits?: Partial<ComputeLimits>
  timeoutMs?: number
}

/** What a pool is doing now. */
export interface ComputePoolStats {
  workers: number
  ready: number
  busy: number
  queued: number
  /** Workers started to replace one that was ended or died. */
  replaced: number
  /** Workers ended because the pool was idle (lazy pools only). */
  retired: number
}

/** Evaluates json-expr-v1 programs on worker threads under every bound. */
export interface ComputePool {
  /** Workers the pool runs while it has work. */
  readonly size: number
  /** Whether workers start on demand (and end when idle) rather than at creation. */
  readonly lazy: boolean
  evaluate(program: unknown, input: unknown, options?: EvaluateOptions): Promise<Evaluation>
  /**
   * Starts the workers that are not running and resolves once every one has started; rejects
   * with the reason when one cannot start. Evaluations need not call it: they start what they need.
   */
  ready(): Promise<void>
  stats(): ComputePoolStats
  /** Ends every worker; waiting and running evaluations fail with `shutting_down`. */
  close(): Promise<void>
}

interface Task {
  request: WorkerRequest
  timeoutMs: number
  resolve: (e: Evaluation) => void
  reject: (e: BatonError) => void
}

interface Slot {
  worker: Worker
  /** The step count its running evaluation last wrote. */
  progress: Float64Array
  ready: boolean
  started: Promise<void>
  failStart?: (error: Error) => void
  task?: Task
  timer?: NodeJS.Timeout
}

// Built, the worker is plain JavaScript beside this file; from sources (tests, benchmarks) a
// worker thread does not inherit the TypeScript loader, so an entry registers it first.
const ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('./worker-entry.mjs', import.meta.url)
  : new URL('./worker.js', import.meta.url)

// The idle check's default timer: unref'd, so an idle pool never holds the process open.
const scheduleTimer = (run: () => void, ms: number): (() => void) => {
  const timer = setTimeout(run, ms)
  timer.unref()
  return () => clearTimeout(timer)
}

/** Creates a pool of compute workers, started at once or, with `idleMs`, on demand. */
export function createComputePool(options: ComputePoolOptions = {}): ComputePool {
  const size = options.size ?? Math.min(2, os.availableParallelism())
  const maxQueue = options.maxQueue ?? 256
  const baseLimits = resolveComputeLimits(options.limits)
  const workerLimits = resolveWorkerLimits(options.worker)
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new BatonError('invalid_request', 'size must be a positive integer', { field: 'size' })
  }
  const idleMs = options.idleMs
  if (idleMs !== undefined && (!Number.isSafeInteger(idleMs) || idleMs < 0)) {
    throw new BatonError('invalid_request', 'idleMs must be a non-negative integer', {
      field: 'idleMs',
    })
  }
  const schedule = options.schedule ?? scheduleTimer
  const slots = new Set<Slot>()
  const queue: Task[] = []
  let nextId = 1
  let replaced = 0
  let retired = 0
  let closed = false
  let cancelIdle: (() => void) | undefined

  const spawn = (): Slot => {
    const shared = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT)
    const worker = new Worker(options.entry ?? ENTRY, {
      execArgv: [],
      workerData: { progress: shared } satisfies WorkerData,
      resourceLimits: {
        maxOldGenerationSizeMb: workerLimits.memoryMb,
        maxYoungGenerationSizeMb: Math.max(2, Math.floor(workerLimits.memoryMb / 8)),
      },
    })
    worker.unref()
    let markStarted: () => void = () => {}
    // A worker that dies before it is ready fails `ready()` rather than leaving it waiting.
    let failStart: (error: Error) => void = () => {}
    const started = new Promise<void>((resolve, reject) => {
      markStarted = resolve
      failStart = reject
    })
    started.catch(() => {})
    const slot: Slot = {
      worker,
      progress: new Float64Array(shared),
      ready: false,
      started,
      failStart: (error) => failStart(error),
    }
    worker.on('message', (m: WorkerAnswer) => {
      if ('ready' in m) {
        slot.ready = true
        markStarted()
        return dispatch()
      }
      const task = slot.task
      if (!task || task.request.id !== m.id) return
      finish(slot)
      if (m.ok) {
        task.resolve({
          output: JSON.parse(m.outputText) as JsonValue,
          outputText: m.outputText,
          steps: m.steps,
        })
      } else {
        const code: ErrorCode = isErrorCode(m.code) ? m.code : 'internal'
        task.reject(new BatonError(code, m.message, m.context))
      }
      dispatch()
    })
    worker.on('error', (error: Error & { code?: string }) => {
      const memory = error.code === 'ERR_WORKER_OUT_OF_MEMORY'
      if (!slot.ready) {
        slot.failStart?.(new Error(`A compute worker could not start: ${error.message}`))
      }
      lose(
        slot,
        memory
          ? new BatonError(
              'compute_memory_exceeded',
              `The evaluation used more than ${workerLimits.memoryMb} MiB`,
              { limitMb: workerLimits.memoryMb },
            )
          : new BatonError('internal', 'A compute worker failed'),
      )
    })
    worker.on('exit', () => {
      slot.failStart?.(new Error('A compute worker stopped before it was ready'))
      lose(slot, new BatonError('internal', 'A compute worker stopped'))
    })
    slots.add(slot)
    return slot
  }

  const finish = (slot: Slot) => {
    clearTimeout(slot.timer)
    slot.timer = undefined
    slot.task = undefined
    slot.worker.unref()
  }

  // A worker ended (by us on overrun, or by itself): fail its task with the steps it had used, and
  // replace the worker while open.
  const lose = (slot: Slot, error: BatonError) => {
    if (!slots.delete(slot)) return
    const task = slot.task
    const used = Math.min(slot.progress[0] ?? 0, task?.request.limits.maxSteps ?? 0)
    const wasReady = slot.ready
    finish(slot)
    slot.worker.removeAllListeners('message')
    void slot.worker.terminate()
    task?.reject(withSteps(error, used) as BatonError)
    if (closed) return
    if (!wasReady) {
      // it died while starting: do not spin; fail what waits, and start afresh on the next call
      for (const t of queue.splice(0)) {
        t.reject(new BatonError('internal', 'A compute worker could not start'))
      }
      return
    }
    replaced++
    spawn()
    dispatch()
  }

  const dispatch = () => {
    for (const slot of slots) {
      if (queue.length === 0) break
      if (!slot.ready || slot.task) continue
      const task = queue.shift()!
      slot.task = task
      slot.worker.ref()
      slot.timer = setTimeout(() => {
        lose(
          slot,
          new BatonError('compute_timeout', `The evaluation ran longer than ${task.timeoutMs} ms`, {
            limitMs: task.timeoutMs,
          }),
        )
      }, task.timeoutMs)
      slot.worker.postMessage(task.request)
    }
    watchIdle()
  }

  // Arms the idle check while nothing runs or waits; any work cancels it.
  const watchIdle = () => {
    if (idleMs === undefined || closed) return
    let idle = queue.length === 0
    for (const slot of slots) if (slot.task || !slot.ready) idle = false
    if (!idle || slots.size === 0) {
      cancelIdle?.()
      cancelIdle = undefined
      return
    }
    cancelIdle ??= schedule(() => {
      cancelIdle = undefined
      retire()
    }, idleMs)
  }

  // Ends every worker of an idle pool; the next evaluation starts them again.
  const retire = () => {
    if (closed || queue.length > 0) return
    for (const slot of slots) if (slot.task || !slot.ready) return
    for (const slot of [...slots]) {
      slots.delete(slot)
      slot.worker.removeAllListeners()
      slot.worker.on('error', () => {})
      void slot.worker.terminate()
      retired++
    }
  }

  const fill = () => {
    while (slots.size < size) spawn()
  }

  // A lazy pool starts a worker only for work no running or starting worker will take: the first
  // job waits for one worker's start, not for all of them.
  const grow = () => {
    let spare = 0
    for (const slot of slots) if (!slot.task) spare++
    while (slots.size < size && spare < queue.length) {
      spawn()
      spare++
    }
  }
  if (idleMs === undefined) fill()

  return {
    size,
    lazy: idleMs !== undefined,
    evaluate(program, input, evaluateOptions = {}) {
      if (closed) {
        return Promise.reject(new BatonError('shutting_down', 'The compute pool is closed'))
      }
      try {
        const limits = evaluateOptions.limits
          ? resolveComputeLimits({ ...baseLimits, ...evaluateOptions.limits })
          : baseLimits
        const timeoutMs =
          evaluateOptions.timeoutMs === undefined
            ? workerLimits.timeoutMs
            : resolveWorkerLimits({ timeoutMs: evaluateOptions.timeoutMs }).timeoutMs
        // checked here first, so that JSON.stringify below meets only bounded JSON values
        try {
          compileJsonExpr(program, limits)
          checkJsonInput(input, limits)
        } catch (error) {
          throw withSteps(error, 0)
        }
        if (queue.length >= maxQueue) {
          throw new BatonError(
            'compute_busy',
            'Every compute worker is busy',
            { retry_after: 1 },
            { 'retry-after': '1' },
          )
        }
        const request: WorkerRequest = {
          id: nextId++,
          program: JSON.stringify(program),
          input: JSON.stringify(input),
          limits,
        }
        return new Promise<Evaluation>((resolve, reject) => {
          queue.push({ request, timeoutMs, resolve, reject })
          grow()
          dispatch()
        })
      } catch (error) {
        return Promise.reject(error)
      }
    },
    async ready() {
      fill()
      await Promise.all([...slots].map((s) => s.started))
    },
    stats() {
      let busy = 0
      let ready = 0
      for (const s of slots) {
        if (s.task) busy++
        if (s.ready) ready++
      }
      return { workers: slots.size, ready, busy, queued: queue.length, replaced, retired }
    },
    async close() {
      closed = true
      cancelIdle?.()
      cancelIdle = undefined
      const stopping = new BatonError('shutting_down', 'The compute pool is closed')
      for (const t of queue.splice(0)) t.reject(stopping)
      const all = [...slots]
      slots.clear()
      await Promise.all(
        all.map(async (s) => {
          const task = s.task
          finish(s)
          s.worker.removeAllListeners()
          s.worker.on('error', () => {})
          task?.reject(stopping)
          await s.worker.terminate()
        }),
      )
    },
  }
}
