import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { agents, clockAt, T0, trustOf } from '../test/fixtures.js'
import { CborTag, decodeCbor, encodeCbor } from './cbor.js'
import { parseCoseElement, signCose } from './cose.js'
import { handoffDigest } from './digest.js'
import { signOffer, toHandoff } from './offer.js'
import { verifyHandoff } from './verify.js'

const P = 'spiffe://a.example/agent/planner'
const C = 'spiffe://b.example/agent/coder'
const list = await agents([P, C])
const planner = list[0]!

describe('deterministic CBOR', () => {
  test('shortest heads and sorted map keys (RFC 8949 section 4.2.1)', () => {
    assert.equal(encodeCbor(0).toString('hex'), '00')
    assert.equal(encodeCbor(23).toString('hex'), '17')
    assert.equal(encodeCbor(24).toString('hex'), '1818')
    assert.equal(encodeCbor(-1).toString('hex'), '20')
    assert.equal(encodeCbor(1_793_000_000).toString('hex'), '1a6adf0240')
    assert.equal(
      encodeCbor({ iss: 1, v: 2, aud: 3 }).toString('hex'),
      'a361760263617564036369737301',
    )
    assert.equal(
      encodeCbor(
        new Map([
          [4, 1],
          [1, 2],
        ]),
      ).toString('hex'),
      'a201020401',
    )
    assert.throws(() => encodeCbor(1.5), { reason: 'invalid-input' })
  })

  test('tags and byte strings', () => {
    const b = encodeCbor(new CborTag([new Uint8Array([1]), new Map()], 18))
    assert.equal(b.toString('hex'), 'd2824101a0')
    const back = decodeCbor(b)
    assert.ok(back instanceof CborTag)
  })
})

describe('COSE_Sign1', () => {
  test('tag 18, alg and kid protected, same member names as text keys', () => {
    const cose = signCose({ v: 1, typ: 'offer', iss: P }, planner.signer)
    assert.equal(cose[0], 0xd2)
    const p = parseCoseElement(cose)
    assert.equal(p.alg, 'EdDSA')
    assert.equal(p.kid, planner.signer.kid)
    assert.deepEqual(p.payload, { v: 1, typ: 'offer', iss: P })
  })

  test('the digest is over the tagged COSE bytes; an offer verifies', async () => {
    const offer = signOffer({
      signer: planner.signer,
      aud: C,
      dialog: 'd',
      iat: T0,
      format: 'cose',
    })
    assert.equal(offer.digest, handoffDigest(offer.element))
    const r = await verifyHandoff(toHandoff(offer), {
      trust: trustOf(list),
      audience: C,
      now: clockAt(T0),
    })
    assert.equal(r.ok, true)
  })

  test('non-deterministic encodings and wrong structures are bad-signature', async () => {
    const cose = signCose({ v: 1 }, planner.signer)
    // untagged
    assert.throws(() => parseCoseElement(cose.subarray(1)), { reason: 'bad-signature' })
    // a 24-bit head for a small array length is not the shortest form
    const longHead = Buffer.concat([Buffer.from([0xd2, 0x98, 0x04]), cose.subarray(2)])
    assert.throws(() => parseCoseElement(longHead), { reason: 'bad-signature' })
    // trailing garbage
    assert.throws(() => parseCoseElement(Buffer.concat([cose, Buffer.from([0])])), {
      reason: 'bad-signature',
    })
    // crit in the protected header
    const prot = encodeCbor(
      new Map<number, never>([
        [1, -8 as never],
        [2, [1] as never],
        [4, Buffer.from('k') as never],
      ]),
    )
    const withCrit = encodeCbor(
      new CborTag([prot, new Map(), encodeCbor({ v: 1 }), Buffer.alloc(64)], 18),
    )
    assert.throws(() => parseCoseElement(withCrit), { reason: 'bad-signature' })
    // unknown algorithm
    const prot2 = encodeCbor(
      new Map<number, never>([
        [1, -35 as never],
        [4, Buffer.from('k') as never],
      ]),
    )
    const es384 = encodeCbor(
      new CborTag([prot2, new Map(), encodeCbor({ v: 1 }), Buffer.alloc(64)], 18),
    )
    assert.throws(() => parseCoseElement(es384), { reason: 'bad-signature' })
  })
})
