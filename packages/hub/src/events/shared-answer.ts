/**
 * Answers that many replies share: one object for every waiter a change wakes (a long poll's
 * view, read once per change and shared by every waiter holding the same access). Such an answer
 * is encoded as JSON once, the first time it is sent, and every later reply sends the same
 * octets: 10,000 waiters woken by one move cost one `JSON.stringify`, not 10,000.
 */
const shared = new WeakMap<object, Buffer | null>()

/**
 * Marks `answer` as shared by many replies and freezes it. Its members must not change after it
 * is made (a shared view never does), since every reply sends what the first one encoded.
 */
export function shareAnswer<T extends object>(answer: T): Readonly<T> {
  shared.set(answer, null)
  return Object.freeze(answer)
}

/** The JSON octets of a shared answer, encoded on its first use; undefined for anything else. */
export function sharedAnswerBytes(value: unknown): Buffer | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const known = shared.get(value)
  if (known === undefined) return undefined
  if (known !== null) return known
  const bytes = Buffer.from(JSON.stringify(value), 'utf8')
  shared.set(value, bytes)
  return bytes
}
