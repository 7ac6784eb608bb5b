// The bounds of one json-expr-v1 evaluation. The evaluator counts steps and sizes itself, so the
// first six bounds are deterministic; wall time and memory are enforced by the worker pool.
import { BatonError } from '@baton/protocol'

/** Every bound a json-expr-v1 evaluation runs under; each overrun has its own error code. */
export interface ComputeLimits {
  /** Largest program, in bytes of its JSON text (`compute_program_too_large`). */
  maxProgramBytes: number
  /** Largest input, in bytes of its JSON text (`compute_input_too_large`). */
  maxInputBytes: number
  /** Deepest nesting of the program, the input and any value built (`compute_depth_exceeded`). */
  maxDepth: number
  /** Most evaluation steps, as docs/compute.md counts them (`compute_steps_exceeded`). */
  maxSteps: number
  /** Largest output, in bytes of its JSON text (`compute_output_too_large`). */
  maxOutputBytes: number
  /** Longest string an operator may build, in UTF-16 code units (`compute_string_too_long`). */
  maxStringLength: number
  /** Longest array an operator may build (`compute_array_too_long`). */
  maxArrayLength: number
}

/** Bounds of the worker that runs evaluations; the evaluator cannot count these itself. */
export interface WorkerLimits {
  /** Longest wall time of one evaluation before its worker is ended (`compute_timeout`). */
  timeoutMs: number
  /** Heap of one worker (V8 old generation), in MiB (`compute_memory_exceeded`). */
  memoryMb: number
}

/** The defaults: generous for rules and reshaping over a small document, small for a hostile one. */
export const DEFAULT_COMPUTE_LIMITS: Readonly<ComputeLimits> = Object.freeze({
  maxProgramBytes: 65_536,
  maxInputBytes: 1_048_576,
  maxDepth: 64,
  maxSteps: 1_000_000,
  maxOutputBytes: 1_048_576,
  maxStringLength: 65_536,
  maxArrayLength: 65_536,
})

/** The worker defaults: five seconds of wall time and a 64 MiB heap per evaluation. */
export const DEFAULT_WORKER_LIMITS: Readonly<WorkerLimits> = Object.freeze({
  timeoutMs: 5_000,
  memoryMb: 64,
})

function positiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new BatonError('invalid_request', `${name} must be a positive integer`, { field: name })
  }
  return value
}

/** Fills the defaults under the given bounds and checks that each is a positive integer. */
export function resolveComputeLimits(overrides: Partial<ComputeLimits> = {}): ComputeLimits {
  const out = { ...DEFAULT_COMPUTE_LIMITS }
  for (const key of Object.keys(DEFAULT_COMPUTE_LIMITS) as (keyof ComputeLimits)[]) {
    const v = overrides[key]
    if (v !== undefined) out[key] = positiveInteger(key, v)
  }
  return out
}

/** Fills the worker defaults under the given bounds and checks each. */
export function resolveWorkerLimits(overrides: Partial<WorkerLimits> = {}): WorkerLimits {
  return {
    timeoutMs: positiveInteger('timeoutMs', overrides.timeoutMs ?? DEFAULT_WORKER_LIMITS.timeoutMs),
    memoryMb: positiveInteger('memoryMb', overrides.memoryMb ?? DEFAULT_WORKER_LIMITS.memoryMb),
  }
}
