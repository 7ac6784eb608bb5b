/** One difference between two JSON values, at a JSONPath-like location such as `$.a[2].b`. */
export interface JsonChange {
  op: 'add' | 'remove' | 'change'
  path: string
  before?: unknown
  after?: unknown
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`
  return IDENT.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * The changes that turn `before` into `after`, walking objects by key and arrays by index, in a
 * stable order (keys of `before`, then keys only `after` has). At most `limit` changes are listed.
 */
export function diffJson(before: unknown, after: unknown, limit = 200): JsonChange[] {
  const out: JsonChange[] = []
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (out.length >= limit) return
    if (isObject(a) && isObject(b)) {
      for (const key of Object.keys(a)) {
        const p = childPath(path, key)
        if (Object.hasOwn(b, key)) walk(a[key], b[key], p)
        else if (out.length < limit) out.push({ op: 'remove', path: p, before: a[key] })
      }
      for (const key of Object.keys(b)) {
        if (!Object.hasOwn(a, key) && out.length < limit) {
          out.push({ op: 'add', path: childPath(path, key), after: b[key] })
        }
      }
      return
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      const n = Math.max(a.length, b.length)
      for (let i = 0; i < n; i++) {
        const p = childPath(path, i)
        if (i >= b.length) out.push({ op: 'remove', path: p, before: a[i] })
        else if (i >= a.length) out.push({ op: 'add', path: p, after: b[i] })
        else walk(a[i], b[i], p)
        if (out.length >= limit) return
      }
      return
    }
    if (JSON.stringify(a) !== JSON.stringify(b))
      out.push({ op: 'change', path, before: a, after: b })
  }
  walk(before, after, '$')
  return out
}
