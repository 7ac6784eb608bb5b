import type { GroupOutcome } from '../store/transaction.js'

/** How a lane commits what arrives together, and where an input it did not commit goes. */
export interface LaneOptions<I, T> {
  /** Most inputs committed by one `commit`. */
  maxBatch: number
  /** How many `commit`s may run at once. */
  inFlight: number
  /**
   * Commits inputs that arrived together, durably, before it answers: one outcome per input, in
   * order, or undefined for an input it left untouched, which then goes to `careful`.
   */
  commit(inputs: I[]): Promise<(GroupOutcome<T> | undefined)[]>
  /** Commits one input the lane left untouched, the way it would go without the lane. */
  careful(input: I): Promise<T>
  onBatch?: ((size: number) => void) | undefined
  /** Hears how long each `commit` took, in seconds, whether or not it succeeded. */
  onCommitted?: ((seconds: number) => void) | undefined
}

interface Queued<I, T> {
  input: I
  resolve(value: T): void
  reject(error: unknown): void
}

/**
 * Group commit outside the write batcher, for writes that commit in one trip to the database (one
 * autocommit statement, or a script the SQLite writer runs as one transaction): no separate BEGIN
 * or COMMIT, no locked read before the write. Inputs that arrive while `inFlight` commits
 * are running wait and go together in the next. Every caller is answered after the commit that
 * holds its input, after-commit hooks first; a failed commit rejects each of its inputs.
 */
export class AutocommitLane<I, T> {
  private queue: Queued<I, T>[] = []
  private active = 0
  private scheduled = false
  private idle: (() => void)[] = []

  constructor(private readonly opts: LaneOptions<I, T>) {}

  run(input: I): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ input, resolve, reject })
      this.schedule()
    })
  }

  /** Resolves when every input queued so far has been committed or handed to `careful`. */
  async flush(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return
    await new Promise<void>((r) => this.idle.push(r))
  }

  private schedule(): void {
    if (this.scheduled || this.active >= this.opts.inFlight) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.pump()
    })
  }

  private pump(): void {
    while (this.queue.length > 0 && this.active < this.opts.inFlight) {
      const batch = this.queue.splice(0, this.opts.maxBatch)
      this.active++
      this.opts.onBatch?.(batch.length)
      const started = performance.now()
      void this.commit(batch).finally(() => {
        this.opts.onCommitted?.((performance.now() - started) / 1000)
        this.active--
        if (this.queue.length > 0) this.pump()
        else if (this.active === 0) for (const r of this.idle.splice(0)) r()
      })
    }
  }

  private async commit(batch: Queued<I, T>[]): Promise<void> {
    let outcomes: (GroupOutcome<T> | undefined)[]
    try {
      outcomes = await this.opts.commit(batch.map((q) => q.input))
    } catch (error) {
      for (const q of batch) q.reject(error)
      return
    }
    batch.forEach((q, i) => {
      const outcome = outcomes[i]
      if (!outcome) {
        this.opts.careful(q.input).then(q.resolve, q.reject)
      } else if (outcome.ok) {
        try {
          outcome.after?.()
        } catch {
          // an after-commit hook is a notification; its failure must not undo a committed write
        }
        q.resolve(outcome.value)
      } else {
        q.reject(outcome.error)
      }
    })
  }
}
