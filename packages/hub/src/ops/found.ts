import { BatonError } from '@baton/protocol'

/** `value`, or the operator's `not_found` for a read of an id that names nothing. */
export function found<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new BatonError('not_found', `No such ${what}`)
  return value
}
