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

function pointer(path: string, key: string | number): string {
  return `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`
}

/**
 * Checks that `value` is a JSON value within `maxBytes` bytes of JSON text and `maxDepth` levels,
 * and answers its nesting depth. With `depths`, records the depth of every array and object in it.
 * Recursion stops at `maxDepth`, so hostile nesting cannot exhaust the stack.
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
  let bytes = 0
  const add = (n: number) => {
    bytes += n
    if (bytes > maxBytes) {
      throw new BatonError(sizeCode, `The ${where} is larger than ${maxBytes} bytes of JSON`, {
        limit: maxBytes,
      })
    }
  }
  const walk = (v: unknown, level: number, path: string): number => {
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
            path,
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
          path,
        })
    }
    if (level >= limits.maxDepth) {
      throw new BatonError(
        'compute_depth_exceeded',
        `The ${where} nests deeper than ${limits.maxDepth} levels`,
        { limit: limits.maxDepth, where },
      )
    }
    let height = 0
    if (Array.isArray(v)) {
      add(2 + Math.max(0, v.length - 1))
      for (let i = 0; i < v.length; i++) {
        if (!Object.hasOwn(v, i)) {
          throw new BatonError(invalidCode, `The ${where} has a hole in an array`, {
            path: pointer(path, i),
          })
        }
        height = Math.max(height, walk(v[i], level + 1, pointer(path, i)))
      }
    } else {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) {
        throw new BatonError(invalidCode, `The ${where} holds an object that is not plain JSON`, {
          path,
        })
      }
      const keys = Object.keys(v)
      add(2 + Math.max(0, keys.length - 1))
      for (const key of keys) {
        add(Buffer.byteLength(JSON.stringify(key)) + 1)
        height = Math.max(height, walk((v as Obj)[key], level + 1, pointer(path, key)))
      }
    }
    depths?.set(v, height + 1)
    return height + 1
  }
  walk(value, 0, '')
}

function invalid(path: string, message: string, context: Record<string, unknown> = {}): never {
  throw new BatonError('compute_invalid_program', message, { path, ...context })
}

function compileNode(v: unknown, path: string): Node {
  if (v === null || typeof v !== 'object') {
    return { k: 'lit', v: v as null | boolean | number | string }
  }
  if (Array.isArray(v))
    return { k: 'arr', items: v.map((x, i) => compileNode(x, pointer(path, i))) }
  const keys = Object.keys(v)
  if (keys.length !== 1) {
    invalid(path, 'An object in a program is an operator call with exactly one key', {
      keys: keys.length,
    })
  }
  const op = keys[0]!
  const arity = ops.get(op)
  if (arity === undefined) invalid(path, `Unknown operator ${JSON.stringify(op)}`, { operator: op })
  const raw = (v as Obj)[op]
  const list: unknown[] = Array.isArray(raw) ? raw : [raw]
  const [min, max] = arity
  if (list.length < min || (max >= 0 && list.length > max)) {
    const takes = max < 0 ? `at least ${min}` : min === max ? `${min}` : `${min} to ${max}`
    invalid(path, `Operator ${op} takes ${takes} arguments, not ${list.length}`, {
      operator: op,
      arguments: list.length,
    })
  }
  const at = pointer(path, op)
  return {
    k: 'op',
    op,
    args: list.map((x, i) => compileNode(x, Array.isArray(raw) ? pointer(at, i) : at)),
  }
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
  return { language: JSON_EXPR_V1, limits: resolved, root: compileNode(program, '') }
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
  return runCompiled(compileJsonExpr(program, limits), input)
}

/** Checks that an input is a JSON value within the input bounds (bytes and depth). */
export function checkJsonInput(input: unknown, limits: ComputeLimits): void {
  measure(input, 'input', limits)
}

/** Runs a compiled program on one input. */
export function runCompiled(compiled: CompiledProgram, input: unknown): Evaluation {
  const depths = new WeakMap<object, number>()
  measure(input, 'input', compiled.limits, depths)
  const run = new Run(compiled.limits, depths)
  const value = run.eval(compiled.root, input)
  const outputText = run.serialize(value)
  return { output: JSON.parse(outputText) as JsonValue, outputText, steps: run.steps }
}

class Run {
  steps = 0
  constructor(
    readonly limits: ComputeLimits,
    readonly depths: WeakMap<object, number>,
  ) {}

  charge(n: number): void {
    this.steps += n
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

  /** Registers a container the program built, after checking its length and depth. */
  built<T extends unknown[] | Obj>(v: T): T {
    const children = Array.isArray(v) ? v : Object.values(v)
    this.charge(children.length)
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
      const x = v[i]
      const part = x === null ? '' : this.text(x)
      length += part.length + (i > 0 ? 1 : 0)
      this.checkText(length)
      parts.push(part)
    }
    this.chargeText(length)
    return parts.join(',')
  }

  /** ECMAScript ToNumber over the value's primitive (arrays and objects through their text). */
  num(v: unknown): number {
    if (typeof v === 'number') return v
    if (v === null) return 0
    if (typeof v === 'boolean') return v ? 1 : 0
    const s = this.text(v)
    this.chargeText(s.length)
    return Number(s)
  }

  /** parseFloat over the value's text, as JSON Logic's `+` and `*` cast. */
  float(v: unknown): number {
    if (typeof v === 'number') return v
    const s = this.text(v)
    this.chargeText(s.length)
    return Number.parseFloat(s)
  }

  /** Equality by structure: same kind, same primitive, or same elements and members. */
  strictEq(a: unknown, b: unknown): boolean {
    this.charge(1)
    if (a === b) return true
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false
      for (let i = 0; i < a.length; i++) if (!this.strictEq(a[i], b[i])) return false
      return true
    }
    if (Array.isArray(b)) return false
    const ka = Object.keys(a)
    if (ka.length !== Object.keys(b).length) return false
    for (const k of ka) {
      if (!Object.hasOwn(b, k) || !this.strictEq((a as Obj)[k], (b as Obj)[k])) return false
    }
    return true
  }

  /** ECMAScript's `==` over JSON values, except that arrays and objects compare by structure. */
  looseEq(a: unknown, b: unknown): boolean {
    this.charge(1)
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
      this.chargeText(Math.min(pa.length, pb.length))
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
    let cur = data
    for (const seg of p.split('.')) {
      this.charge(1)
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
      const v = this.lookup(data, key, null)
      if (v === null || v === '') out.push(key)
    }
    return this.built(out)
  }

  eval(node: Node, data: unknown): unknown {
    this.charge(1)
    if (node.k === 'lit') return node.v
    if (node.k === 'arr') {
      this.checkLength(node.items.length)
      return this.built(node.items.map((n) => this.eval(n, data)))
    }
    const a = node.args
    const arg = (i: number) => this.eval(a[i]!, data)
    const all = () => a.map((n) => this.eval(n, data))
    switch (node.op) {
      case 'var': {
        const [path, fallback] = all()
        return this.lookup(data, path, a.length > 1 ? fallback : null)
      }
      case 'missing': {
        const values = all()
        return this.missing(data, Array.isArray(values[0]) ? values[0] : values)
      }
      case 'missing_some': {
        const need = this.num(arg(0))
        const list = arg(1)
        const keys = Array.isArray(list) ? list : [list]
        const missed = this.missing(data, keys)
        return keys.length - missed.length >= need ? this.built([]) : missed
      }
      case 'if':
      case '?:': {
        let i = 0
        for (; i + 1 < a.length; i += 2) if (this.truthy(arg(i))) return arg(i + 1)
        return i < a.length ? arg(i) : null
      }
      case '==':
        return this.looseEq(arg(0), arg(1))
      case '!=':
        return !this.looseEq(arg(0), arg(1))
      case '===':
        return this.strictEq(arg(0), arg(1))
      case '!==':
        return !this.strictEq(arg(0), arg(1))
      case '!':
        return !this.truthy(arg(0))
      case '!!':
        return this.truthy(arg(0))
      case 'or': {
        let v: unknown = null
        for (let i = 0; i < a.length; i++) {
          v = arg(i)
          if (this.truthy(v)) return v
        }
        return v
      }
      case 'and': {
        let v: unknown = null
        for (let i = 0; i < a.length; i++) {
          v = arg(i)
          if (!this.truthy(v)) return v
        }
        return v
      }
      case '>':
        return this.less(arg(1), arg(0))
      case '>=':
        return this.lessEq(arg(1), arg(0))
      case '<':
      case '<=': {
        const test = node.op === '<' ? this.less.bind(this) : this.lessEq.bind(this)
        const [x, y, z] = all()
        return a.length === 2 ? test(x, y) : test(x, y) && test(y, z)
      }
      case 'max':
      case 'min': {
        const nums = all().map((v) => this.num(v))
        return node.op === 'max' ? Math.max(...nums) : Math.min(...nums)
      }
      case '+': {
        let sum = 0
        for (const v of all()) sum += this.float(v)
        return sum
      }
      case '*': {
        let product = 1
        for (const v of all()) product *= this.float(v)
        return product
      }
      case '-':
        return a.length === 1 ? -this.num(arg(0)) : this.num(arg(0)) - this.num(arg(1))
      case '/':
        return this.num(arg(0)) / this.num(arg(1))
      case '%':
        return this.num(arg(0)) % this.num(arg(1))
      case 'map':
      case 'filter':
      case 'all':
      case 'none':
      case 'some':
        return this.iterate(node.op, arg(0), a[1]!)
      case 'reduce': {
        const list = arg(0)
        let acc = a.length > 2 ? arg(2) : null
        if (!Array.isArray(list)) return acc
        for (const current of list) {
          acc = this.eval(a[1]!, this.built({ current, accumulator: acc }))
        }
        return acc
      }
      case 'merge': {
        const out: unknown[] = []
        for (const v of all()) {
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
        const [needle, hay] = all()
        if (typeof hay === 'string') {
          const s = this.text(needle)
          this.chargeText(hay.length)
          return hay.includes(s)
        }
        if (!Array.isArray(hay)) return false
        for (const x of hay) if (this.strictEq(needle, x)) return true
        return false
      }
      case 'cat': {
        let length = 0
        const parts: string[] = []
        for (const v of all()) {
          const s = this.text(v)
          length += s.length
          this.checkText(length)
          parts.push(s)
        }
        this.chargeText(length)
        return parts.join('')
      }
      case 'substr': {
        const [source, from, count] = all()
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
