import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { checkRefs, createDigestRef, createSaltedRef, isRefKind, parseRefs } from './refs.js'

describe('refs', () => {
  test('kinds: the four seed kinds or an absolute URI', () => {
    for (const k of [
      'digest',
      'salted-digest',
      'scitt-receipt',
      'learnlog-head',
      'https://x.example/k',
      'urn:x:y',
    ]) {
      assert.equal(isRefKind(k), true)
    }
    for (const k of ['', 'other', 'relative/path', 42]) assert.equal(isRefKind(k), false)
  })

  test('a salt never goes inside the element', () => {
    const { ref, salt } = createSaltedRef('yes')
    assert.equal(salt.length >= 16, true)
    assert.equal('salt' in ref, false)
    assert.equal(parseRefs([{ ...ref, salt: 'AAAA' }]), undefined)
    assert.throws(() => createSaltedRef('yes', { salt: new Uint8Array(15) }), {
      reason: 'invalid-input',
    })
  })

  test('not checked unless policy asks; never verified without the check', async () => {
    const refs = [
      createDigestRef('a'),
      { kind: 'scitt-receipt', digest: createDigestRef('r').digest },
    ]
    const r = await checkRefs(refs, undefined)
    assert.deepEqual(
      r.results.map((x) => x.outcome),
      ['not-checked', 'not-checked'],
    )
    assert.equal(r.failure, undefined)
  })

  test('verified, mismatch and unverifiable', async () => {
    const good = createDigestRef('content')
    const bad = createDigestRef('expected')
    const missing = createDigestRef('missing')
    const { ref: salted, salt } = createSaltedRef('short')
    const load = (ref: { digest: string }) =>
      ref.digest === good.digest
        ? { content: 'content' }
        : ref.digest === bad.digest
          ? { content: 'actual' }
          : ref.digest === salted.digest
            ? { content: 'short', salt }
            : undefined
    const r = await checkRefs([good, salted, missing], { require: 'all', load })
    assert.deepEqual(
      r.results.map((x) => x.outcome),
      ['verified', 'verified', 'unverifiable'],
    )
    assert.equal(r.failure, 'unverifiable-ref')
    const m = await checkRefs([good, bad], { require: 'none', load })
    assert.deepEqual(
      m.results.map((x) => x.outcome),
      ['verified', 'mismatch'],
    )
    assert.equal(m.failure, 'ref-mismatch')
    const opt = await checkRefs([missing], { require: 'none', load })
    assert.equal(opt.failure, undefined)
    assert.equal(opt.results[0]?.outcome, 'unverifiable')
  })

  test('other kinds need a checker; a required one without is unverifiable', async () => {
    const receipt = { kind: 'scitt-receipt', digest: createDigestRef('receipt').digest }
    const r = await checkRefs([receipt], { require: 'all' })
    assert.equal(r.failure, 'unverifiable-ref')
    const c = await checkRefs([receipt], {
      require: 'all',
      checkers: { 'scitt-receipt': () => 'verified' },
    })
    assert.equal(c.results[0]?.outcome, 'verified')
    const lie = await checkRefs([receipt], {
      require: (ref) => ref.kind === 'scitt-receipt',
      checkers: { 'scitt-receipt': () => 'not-checked' },
    })
    assert.equal(lie.results[0]?.outcome, 'unverifiable')
  })
})
