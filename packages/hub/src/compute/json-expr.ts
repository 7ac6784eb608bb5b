// json-expr-v1: JSON Logic (jsonlogic.com) with its operator set pinned, evaluated under bounds
// it counts itself. docs/compute.md is the reference; the semantics below follow it, including
// where JSON Logic implementations disagree. Seed 000: "JSON programs have no arbitrary
// JavaScript, shell, host-file or network access" — nothing here reads a clock, draws a random
// number, does I/O, or looks a name up anywhere but in the program's own JSON values.
import { BatonError, type ErrorCode } from '@baton/protocol'
import { type ComputeLimits, resolveComputeLimits } from './limits.js'

/** The language this evaluator speaks. */
export const JSON_EXPR_V1 = 'json-expr-v1'

/** A JSON value: what a program is, takes and answers. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue }

/** Every operator of json-expr-v1 with the number of arguments it takes (max -1: any). */
export const JSON_EXPR_V1_OPERATORS: Readonly<Record<string, readonly [min: number, max: number]>> =
  Object.freeze({
    var: [0, 2],
    missing: [0, -1],
    missing_some: [2, 2],
    if: [0, -1],
    '?:': [0, -1],
    '==': [2, 2],
    '===': [2, 2],
    '!=': [2, 2],
    '!==': [2, 2],
    '!': [1, 1],
    '!!': [1, 1],
    or: [1, -1],
    and: [1, -1],
    '>': [2, 2],
    '>=': [2, 2],
    '<': [2, 3],
    '<=': [2, 3],
    max: [1, -1],
    min: [1, -1],
    '+': [0, -1],
    '-': [1, 2],
    '*': [1, -1],
    '/': [2, 2],
    '%': [2, 2],
    map: [2, 2],
    filter: [2, 2],
    reduce: [2, 3],
    all: [2, 2],
    none: [2, 2],
    some: [2, 2],
    merge: [0, -1],
    in: [2, 2],
    cat: [0, -1],
    substr: [2, 3],
  })

/** What an evaluation answers: the output, its JSON text, and the steps it took. */
export interface Evaluation {
  output: JsonValue
  /** The output as JSON text (NaN and infinities already written as null). */
  outputText: string
  steps: number
}

// A compiled program: literals, array literals (each element evaluated) and operator calls.
type Node =
  | { readonly k: 'lit'; readonly v: null | boolean | number | string }
  | { readonly k: 'arr'; readonly items: readonly Node[] }
  | { readonly k: 'op'; readonly op: string; readonly args: readonly Node[] }

/** A program checked for size, depth, operators and arity, ready to run on many inputs. */
export interface CompiledProgram {
  readonly language: typeof JSON_EXPR_V1
  readonly limits: ComputeLimits
  /** @internal */
  readonly root: Node
}

type Obj = { [key: string]: unknown }

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

const ops = new Map(Object.entries(JSON_EXPR_V1_OPERATORS))
const INDEX = /^(?:0|[1-9][0-9]*)$/

function escapeKey(key: string | number): string {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1')
}

/** The JSON Pointer of a path kept as a stack of keys, built only when an error names it. */
function pointerOf(keys: readonly (string | number)[]): string {
  let out = ''
  for (const key of keys) out += `/${escapeKey(key)}`
  return out
}

/**
 * Checks that `value` is a JSON value within `maxBytes` bytes of JSON text and `maxDepth` levels,
 * and answers its nesting depth. With `depths`, records the depth of every array and object in it.
 * Recursion stops at `maxDepth`, so hostile nesting cannot exhaust the stack. The walk is linear:
 * the path is a stack of keys, made into a pointer only for an error.
 */
function measure(
  value: unknown,
  where: 'program' | 'input',
  limits: ComputeLimits,
  depths?: WeakMap<object, number>,
): void {
  const maxBytes = where === 'program' ? limits.maxProgramBytes : limits.maxInputBytes
  const sizeCode: ErrorCode =
    where === 'program' ? 'compute_program_too_large' : 'compute_input_too_large'
  const invalidCode: ErrorCode =
    where === 'program' ? 'compute_invalid_program' : 'compute_invalid_input'
  const keys: (string | number)[] = []
  let bytes = 0
  const add = (n: number) => {
    bytes += n
    if (bytes > maxBytes) {
      throw new BatonError(sizeCode, `The ${where} is larger than ${maxBytes} bytes of JSON`, {
        limit: maxBytes,
      })
    }
  }
  const walk = (v: unknown, level: number): number => {
    if (v === null) {
      add(4)
      return 0
    }
    switch (typeof v) {
      case 'boolean':
        add(v ? 4 : 5)
        return 0
      case 'number':
        if (!Number.isFinite(v)) {
          throw new BatonError(invalidCode, `The ${where} holds a number JSON cannot carry`, {
            path: pointerOf(keys),
          })
        }
        add(JSON.stringify(v).length)
        return 0
      case 'string':
        add(Buffer.byteLength(JSON.stringify(v)))
        return 0
      case 'object':
        break
      default:
        throw new BatonError(invalidCode, `The ${where} holds a ${typeof v}, which is not JSON`, {
          path: pointerOf(keys),
        })
    }
    if (level >= limits.maxDepth) throw depthExceeded(where, limits.maxDepth)
    let height = 0
    if (Array.isArray(v)) {
      add(2 + Math.max(0, v.length - 1))
      for (let i = 0; i < v.length; i++) {
        keys.push(i)
        if (!Object.hasOwn(v, i)) {
          throw new BatonError(invalidCode, `The ${where} has a hole in an array`, {
            path: pointerOf(keys),
          })
        }
        height = Math.max(height, walk(v[i], level + 1))
        keys.pop()
      }
    } else {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) {
        throw new BatonError(invalidCode, `The ${where} holds an object that is not plain JSON`, {
          path: pointerOf(keys),
        })
      }
      const members = Object.keys(v)
      add(2 + Math.max(0, members.length - 1))
      for (const key of members) {
        add(Buffer.byteLength(JSON.stringify(key)) + 1)
        keys.push(key)
        height = Math.max(height, walk((v as Obj)[key], level + 1))
        keys.pop()
      }
    }
    depths?.set(v, height + 1)
    return height + 1
  }
  walk(value, 0)
}

/** `compute_depth_exceeded` for a program or input nested deeper than `limit`. */
export function depthExceeded(where: 'program' | 'input', limit: number): BatonError {
  return new BatonError(
    'compute_depth_exceeded',
    `The ${where} nests deeper than ${limit} levels`,
    { limit, where },
  )
}

function invalid(keys: readonly (string | number)[], message: string, context = {}): never {
  throw new BatonError('compute_invalid_program', message, { path: pointerOf(keys), ...context })
}

function compileNode(v: unknown, keys: (string | number)[]): Node {
  if (v === null || typeof v !== 'object') {
    return { k: 'lit', v: v as null | boolean | number | string }
  }
  if (Array.isArray(v)) {
    const items: Node[] = []
    for (let i = 0; i < v.length; i++) {
      keys.push(i)
      items.push(compileNode(v[i], keys))
      keys.pop()
    }
    return { k: 'arr', items }
  }
  const names = Object.keys(v)
  if (names.length !== 1) {
    invalid(keys, 'An object in a program is an operator call with exactly one key', {
      keys: names.length,
    })
  }
  const op = names[0]!
  const arity = ops.get(op)
  if (arity === undefined) invalid(keys, `Unknown operator ${JSON.stringify(op)}`, { operator: op })
  const raw = (v as Obj)[op]
  const list: unknown[] = Array.isArray(raw) ? raw : [raw]
  const [min, max] = arity
  if (list.length < min || (max >= 0 && list.length > max)) {
    const takes = max < 0 ? `at least ${min}` : min === max ? `${min}` : `${min} to ${max}`
    invalid(keys, `Operator ${op} takes ${takes} arguments, not ${list.length}`, {
      operator: op,
      arguments: list.length,
    })
  }
  keys.push(op)
  const args: Node[] = []
  for (let i = 0; i < list.length; i++) {
    if (Array.isArray(raw)) keys.push(i)
    args.push(compileNode(list[i], keys))
    if (Array.isArray(raw)) keys.pop()
  }
  keys.pop()
  return { k: 'op', op, args }
}

/**
 * Checks a json-expr-v1 program (size, depth, operators, arity) and compiles it. Every operator is
 * checked, also in branches a given input would not take.
 *
 * @example compileJsonExpr({ '+': [{ var: 'a' }, 1] })
 */
export function compileJsonExpr(
  program: unknown,
  limits: Partial<ComputeLimits> = {},
): CompiledProgram {
  const resolved = resolveComputeLimits(limits)
  measure(program, 'program', resolved)
  return { language: JSON_EXPR_V1, limits: resolved, root: compileNode(program, []) }
}

/**
 * Evaluates a json-expr-v1 program on an input, in this thread, under the deterministic bounds
 * (steps, sizes, depth). Wall time and memory are bounded only through the worker pool.
 *
 * @example evaluateJsonExpr({ '+': [{ var: 'a' }, 1] }, { a: 2 }).output // 3
 */
export function evaluateJsonExpr(
  program: unknown,
  input: unknown,
  limits: Partial<ComputeLimits> = {},
): Evaluation {
  let compiled: CompiledProgram
  try {
    compiled = compileJsonExpr(program, limits)
  } catch (error) {
    throw withSteps(error, 0)
  }
  return runCompiled(compiled, input)
}

/** Checks that an input is a JSON value within the input bounds (bytes and depth). */
export function checkJsonInput(input: unknown, limits: ComputeLimits): void {
  measure(input, 'input', limits)
}

/** What a run may be given beyond its program and input. */
export interface RunOptions {
  /**
   * Where the run writes its step count as it goes (element 0), so that a worker ended for its
   * wall time or heap can still tell the steps it used.
   */
  progress?: Float64Array
  /** Receives the run's counters when it ends, however it ends (tests read the work per step). */
  meter?: (m: { steps: number; work: number }) => void
}

/**
 * Runs a compiled program on one input. A failure during the run carries the steps it used in its
 * context (`steps`), like an answer does; one that crossed the step bound used all of them.
 */
export function runCompiled(
  compiled: CompiledProgram,
  input: unknown,
  options: RunOptions = {},
): Evaluation {
  const depths = new WeakMap<object, number>()
  const run = new Run(compiled.limits, depths, options.progress)
  try {
    measure(input, 'input', compiled.limits, depths)
    const value = run.eval(compiled.root, input)
    const outputText = run.serialize(value)
    return { output: JSON.parse(outputText) as JsonValue, outputText, steps: run.steps }
  } catch (error) {
    throw withSteps(error, Math.min(run.steps, compiled.limits.maxSteps))
  } finally {
    options.meter?.({ steps: run.steps, work: run.work })
  }
}

/** The error with `steps` in its context (a project error; anything else is left as it is). */
export function withSteps(error: unknown, steps: number): unknown {
  if (!(error instanceof BatonError) || typeof error.context.steps === 'number') return error
  return new BatonError(error.code, error.message, { ...error.context, steps }, error.headers)
}

// The cost model (docs/compute.md, Steps): one step per program node evaluated, per element an
// operator builds, visits or compares, per `var` segment and `missing` key, and per full 16 code
// units of text an operator builds, converts, compares or searches. `work` counts, where each
// builtin is called, the elements and code units it touches; it is not a bound, only what tests
// check the steps against (no step may stand for more than a constant amount of it).
class Run {
  steps = 0
  work = 0
  readonly keys = new WeakMap<object, string[]>()
  constructor(
    readonly limits: ComputeLimits,
    readonly depths: WeakMap<object, number>,
    readonly progress?: Float64Array,
  ) {}

  charge(n: number): void {
    this.steps += n
    if (this.progress) this.progress[0] = this.steps
    if (this.steps > this.limits.maxSteps) {
      throw new BatonError(
        'compute_steps_exceeded',
        `The evaluation took more than ${this.limits.maxSteps} steps`,
        { limit: this.limits.maxSteps },
      )
    }
  }

  chargeText(length: number): void {
    if (length >= 16) this.charge(Math.floor(length / 16))
  }

  depthOf(v: unknown): number {
    if (v === null || typeof v !== 'object') return 0
    const known = this.depths.get(v)
    if (known !== undefined) return known
    let height = 0
    for (const x of Array.isArray(v) ? v : Object.values(v)) {
      height = Math.max(height, this.depthOf(x))
    }
    this.depths.set(v, height + 1)
    return height + 1
  }

  /**
   * The member names of an object, listed once per object: V8 lists a large object's members in
   * order, sorting them, so a listing repeated per comparison would cost more than its steps.
   */
  keysOf(o: object): string[] {
    let known = this.keys.get(o)
    if (known === undefined) {
      known = Object.keys(o)
      this.keys.set(o, known)
    }
    return known
  }

  /** Registers a container the program built, after checking its length and depth. */
  built<T extends unknown[] | Obj>(v: T): T {
    const children = Array.isArray(v) ? v : Object.values(v)
    this.charge(children.length)
    this.work += children.length
    let height = 0
    for (const x of children) height = Math.max(height, this.depthOf(x))
    if (height + 1 > this.limits.maxDepth) {
      throw new BatonError(
        'compute_depth_exceeded',
        `The program built a value nested deeper than ${this.limits.maxDepth} levels`,
        { limit: this.limits.maxDepth, where: 'value' },
      )
    }
    this.depths.set(v, height + 1)
    return v
  }

  checkLength(n: number): void {
    if (n > this.limits.maxArrayLength) {
      throw new BatonError(
        'compute_array_too_long',
        `The program built an array longer than ${this.limits.maxArrayLength} elements`,
        { limit: this.limits.maxArrayLength },
      )
    }
  }

  checkText(n: number): void {
    if (n > this.limits.maxStringLength) {
      throw new BatonError(
        'compute_string_too_long',
        `The program built a string longer than ${this.limits.maxStringLength} code units`,
        { limit: this.limits.maxStringLength },
      )
    }
  }

  // JSON Logic truthiness (jsonlogic.com/truthy): false, null, 0, NaN, "" and [] are false.
  truthy(v: unknown): boolean {
    if (Array.isArray(v)) return v.length > 0
    return Boolean(v)
  }

  /** The string form of a value, as ECMAScript's ToString gives it (arrays joined by commas). */
  text(v: unknown): string {
    if (typeof v === 'string') return v
    if (v === null || typeof v !== 'object') return String(v)
    if (!Array.isArray(v)) return '[object Object]'
    let length = 0
    const parts: string[] = []
    for (let i = 0; i < v.length; i++) {
      this.charge(1)
      this.work += 1
      const x = v[i]
      const part = x === null ? '' : this.text(x)
      length += part.length + (i > 0 ? 1 : 0)
      this.checkText(length)
      parts.push(part)
    }
    this.chargeText(length)
    this.work += length
    return parts.join(',')
  }

  /** ECMAScript ToNumber over the value's primitive (arrays and objects through their text). */
  num(v: unknown): number {
    if (typeof v === 'number') return v
    if (v === null) return 0
    if (typeof v === 'boolean') return v ? 1 : 0
    const s = this.text(v)
    this.chargeText(s.length)
    this.work += s.length
    return Number(s)
  }

  /** parseFloat over the value's text, as JSON Logic's `+` and `*` cast. */
  float(v: unknown): number {
    if (typeof v === 'number') return v
    const s = this.text(v)
    this.chargeText(s.length)
    this.work += s.length
    return Number.parseFloat(s)
  }

  /** Equality by structure: same kind, same primitive, or same elements and members. */
  strictEq(a: unknown, b: unknown): boolean {
    this.charge(1)
    this.work += 1
    if (typeof a === 'string' && typeof b === 'string') {
      // two strings compare code unit by code unit
      const n = Math.min(a.length, b.length)
      this.chargeText(n)
      this.work += n
      return a === b
    }
    if (a === b) return true
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false
      for (let i = 0; i < a.length; i++) if (!this.strictEq(a[i], b[i])) return false
      return true
    }
    if (Array.isArray(b)) return false
    const ka = this.keysOf(a)
    const kb = this.keysOf(b)
    // listing the members costs one step each, whether or not the counts agree
    this.charge(ka.length + kb.length)
    this.work += ka.length + kb.length
    if (ka.length !== kb.length) return false
    for (const k of ka) {
      if (!Object.hasOwn(b, k) || !this.strictEq((a as Obj)[k], (b as Obj)[k])) return false
    }
    return true
  }

  /** ECMAScript's `==` over JSON values, except that arrays and objects compare by structure. */
  looseEq(a: unknown, b: unknown): boolean {
    this.charge(1)
    this.work += 1
    const ka = kind(a)
    const kb = kind(b)
    if (ka === kb) return this.strictEq(a, b)
    if (ka === 'null' || kb === 'null') return false
    if (ka === 'boolean') return this.looseEq(a ? 1 : 0, b)
    if (kb === 'boolean') return this.looseEq(a, b ? 1 : 0)
    if (ka === 'number' && kb === 'string') return a === this.num(b)
    if (ka === 'string' && kb === 'number') return this.num(a) === b
    const pa = ka === 'array' || ka === 'object'
    const pb = kb === 'array' || kb === 'object'
    if (pa && !pb) return this.looseEq(this.text(a), b)
    if (pb && !pa) return this.looseEq(a, this.text(b))
    return false
  }

  /** ECMAScript's relational comparison: -1, 0 or 1, or undefined when a NaN is involved. */
  compare(a: unknown, b: unknown): -1 | 0 | 1 | undefined {
    const pa = typeof a === 'object' && a !== null ? this.text(a) : a
    const pb = typeof b === 'object' && b !== null ? this.text(b) : b
    if (typeof pa === 'string' && typeof pb === 'string') {
      const n = Math.min(pa.length, pb.length)
      this.chargeText(n)
      this.work += n
      return pa < pb ? -1 : pa > pb ? 1 : 0
    }
    const na = this.num(pa)
    const nb = this.num(pb)
    if (Number.isNaN(na) || Number.isNaN(nb)) return undefined
    return na < nb ? -1 : na > nb ? 1 : 0
  }

  less(a: unknown, b: unknown): boolean {
    return this.compare(a, b) === -1
  }

  lessEq(a: unknown, b: unknown): boolean {
    const c = this.compare(a, b)
    return c === -1 || c === 0
  }

  /** `var`: a dotted path into the data; a missing path answers the default, a null stays null. */
  lookup(data: unknown, path: unknown, fallback: unknown): unknown {
    if (path === undefined || path === null || path === '') return data
    const p = typeof path === 'string' ? path : this.text(path)
    this.chargeText(p.length)
    this.work += p.length
    let cur = data
    for (const seg of p.split('.')) {
      this.charge(1)
      this.work += 1
      if (Array.isArray(cur)) {
        if (!INDEX.test(seg)) return fallback
        const i = Number(seg)
        if (i >= cur.length) return fallback
        cur = cur[i]
      } else if (isObj(cur)) {
        if (!Object.hasOwn(cur, seg)) return fallback
        cur = cur[seg]
      } else {
        return fallback
      }
    }
    return cur
  }

  missing(data: unknown, keys: readonly unknown[]): unknown[] {
    const out: unknown[] = []
    for (const key of keys) {
      this.charge(1)
      this.work += 1
      const v = this.lookup(data, key, null)
      if (v === null || v === '') out.push(key)
    }
    return this.built(out)
  }

  /** The arguments, each evaluated, in order. */
  evalAll(args: readonly Node[], data: unknown): unknown[] {
    const out: unknown[] = []
    for (const n of args) out.push(this.eval(n, data))
    return out
  }

  eval(node: Node, data: unknown): unknown {
    this.charge(1)
    this.work += 1
    if (node.k === 'lit') return node.v
    if (node.k === 'arr') {
      this.checkLength(node.items.length)
      return this.built(this.evalAll(node.items, data))
    }
    const a = node.args
    switch (node.op) {
      case 'var': {
        const [path, fallback] = this.evalAll(a, data)
        return this.lookup(data, path, a.length > 1 ? fallback : null)
      }
      case 'missing': {
        const values = this.evalAll(a, data)
        return this.missing(data, Array.isArray(values[0]) ? values[0] : values)
      }
      case 'missing_some': {
        const need = this.num(this.eval(a[0]!, data))
        const list = this.eval(a[1]!, data)
        const keys = Array.isArray(list) ? list : [list]
        const missed = this.missing(data, keys)
        return keys.length - missed.length >= need ? this.built([]) : missed
      }
      case 'if':
      case '?:': {
        let i = 0
        for (; i + 1 < a.length; i += 2)
          if (this.truthy(this.eval(a[i]!, data))) return this.eval(a[i + 1]!, data)
        return i < a.length ? this.eval(a[i]!, data) : null
      }
      case '==':
        return this.looseEq(this.eval(a[0]!, data), this.eval(a[1]!, data))
      case '!=':
        return !this.looseEq(this.eval(a[0]!, data), this.eval(a[1]!, data))
      case '===':
        return this.strictEq(this.eval(a[0]!, data), this.eval(a[1]!, data))
      case '!==':
        return !this.strictEq(this.eval(a[0]!, data), this.eval(a[1]!, data))
      case '!':
        return !this.truthy(this.eval(a[0]!, data))
      case '!!':
        return this.truthy(this.eval(a[0]!, data))
      case 'or': {
        let v: unknown = null
        for (let i = 0; i < a.length; i++) {
          v = this.eval(a[i]!, data)
          if (this.truthy(v)) return v
        }
        return v
      }
      case 'and': {
        let v: unknown = null
        for (let i = 0; i < a.length; i++) {
          v = this.eval(a[i]!, data)
          if (!this.truthy(v)) return v
        }
        return v
      }
      case '>':
        return this.less(this.eval(a[1]!, data), this.eval(a[0]!, data))
      case '>=':
        return this.lessEq(this.eval(a[1]!, data), this.eval(a[0]!, data))
      case '<':
      case '<=': {
        const test = node.op === '<' ? this.less.bind(this) : this.lessEq.bind(this)
        const [x, y, z] = this.evalAll(a, data)
        return a.length === 2 ? test(x, y) : test(x, y) && test(y, z)
      }
      case 'max':
      case 'min': {
        const nums = this.evalAll(a, data).map((v) => this.num(v))
        return node.op === 'max' ? Math.max(...nums) : Math.min(...nums)
      }
      case '+': {
        let sum = 0
        for (const v of this.evalAll(a, data)) sum += this.float(v)
        return sum
      }
      case '*': {
        let product = 1
        for (const v of this.evalAll(a, data)) product *= this.float(v)
        return product
      }
      case '-':
        return a.length === 1
          ? -this.num(this.eval(a[0]!, data))
          : this.num(this.eval(a[0]!, data)) - this.num(this.eval(a[1]!, data))
      case '/':
        return this.num(this.eval(a[0]!, data)) / this.num(this.eval(a[1]!, data))
      case '%':
        return this.num(this.eval(a[0]!, data)) % this.num(this.eval(a[1]!, data))
      case 'map':
      case 'filter':
      case 'all':
      case 'none':
      case 'some':
        return this.iterate(node.op, this.eval(a[0]!, data), a[1]!)
      case 'reduce': {
        const list = this.eval(a[0]!, data)
        let acc = a.length > 2 ? this.eval(a[2]!, data) : null
        if (!Array.isArray(list)) return acc
        for (const current of list) {
          acc = this.eval(a[1]!, this.built({ current, accumulator: acc }))
        }
        return acc
      }
      case 'merge': {
        const out: unknown[] = []
        for (const v of this.evalAll(a, data)) {
          if (Array.isArray(v)) {
            this.checkLength(out.length + v.length)
            for (const x of v) out.push(x)
          } else {
            this.checkLength(out.length + 1)
            out.push(v)
          }
        }
        return this.built(out)
      }
      case 'in': {
        const [needle, hay] = this.evalAll(a, data)
        if (typeof hay === 'string') {
          const s = this.text(needle)
          // a search reads the text and the needle, each at most once (Boyer-Moore-Horspool and
          // its linear fallbacks)
          this.chargeText(hay.length + s.length)
          this.work += hay.length + s.length
          return hay.includes(s)
        }
        if (!Array.isArray(hay)) return false
        for (const x of hay) if (this.strictEq(needle, x)) return true
        return false
      }
      case 'cat': {
        let length = 0
        const parts: string[] = []
        for (const v of this.evalAll(a, data)) {
          const s = this.text(v)
          length += s.length
          this.checkText(length)
          parts.push(s)
        }
        this.chargeText(length)
        this.work += length
        return parts.join('')
      }
      case 'substr': {
        const [source, from, count] = this.evalAll(a, data)
        const s = this.text(source)
        const size = s.length
        let start = integer(this.num(from))
        start = start < 0 ? Math.max(size + start, 0) : Math.min(start, size)
        let end = size
        if (a.length > 2) {
          const n = integer(this.num(count))
          // JSON Logic: a negative length stops that many code units before the end
          end = n < 0 ? Math.max(size + n, start) : Math.min(start + n, size)
        }
        this.chargeText(end - start)
        this.work += end - start
        return s.slice(start, end)
      }
      default:
        throw new BatonError('internal', `Operator ${node.op} has no implementation`)
    }
  }

  iterate(op: string, list: unknown, body: Node): unknown {
    if (!Array.isArray(list))
      return op === 'map' || op === 'filter' ? this.built([]) : op === 'none'
    switch (op) {
      case 'map':
        this.checkLength(list.length)
        return this.built(list.map((x) => this.eval(body, x)))
      case 'filter':
        return this.built(list.filter((x) => this.truthy(this.eval(body, x))))
      case 'all':
        if (list.length === 0) return false
        for (const x of list) if (!this.truthy(this.eval(body, x))) return false
        return true
      case 'none':
        for (const x of list) if (this.truthy(this.eval(body, x))) return false
        return true
      default:
        for (const x of list) if (this.truthy(this.eval(body, x))) return true
        return false
    }
  }

  /** The output as JSON text, stopping as soon as it passes the output bound. */
  serialize(value: unknown): string {
    const max = this.limits.maxOutputBytes
    const parts: string[] = []
    let bytes = 0
    const put = (s: string, ascii: boolean) => {
      bytes += ascii ? s.length : Buffer.byteLength(s)
      if (bytes > max) {
        throw new BatonError(
          'compute_output_too_large',
          `The output is larger than ${max} bytes of JSON`,
          { limit: max },
        )
      }
      parts.push(s)
    }
    const write = (v: unknown): void => {
      if (v === null) put('null', true)
      else if (typeof v === 'boolean') put(v ? 'true' : 'false', true)
      else if (typeof v === 'number') put(Number.isFinite(v) ? JSON.stringify(v) : 'null', true)
      else if (typeof v === 'string') put(JSON.stringify(v), false)
      else if (Array.isArray(v)) {
        put('[', true)
        for (let i = 0; i < v.length; i++) {
          if (i > 0) put(',', true)
          write(v[i])
        }
        put(']', true)
      } else {
        put('{', true)
        let first = true
        for (const [k, x] of Object.entries(v as Obj)) {
          put(`${first ? '' : ','}${JSON.stringify(k)}:`, false)
          first = false
          write(x)
        }
        put('}', true)
      }
    }
    write(value)
    return parts.join('')
  }
}

type Kind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object'

function kind(v: unknown): Kind {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  return typeof v as Kind
}

// ECMAScript ToIntegerOrInfinity, as String.prototype.substr applies it.
function integer(n: number): number {
  return Number.isNaN(n) ? 0 : Math.trunc(n)
}
