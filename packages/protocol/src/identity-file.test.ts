import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { AgentLabel, IdentityFile } from './identity.js'
import { isAgentLabel, readIdentityFile } from './identity-file.js'

const member = fc.stringMatching(/^[A-Za-z0-9_-]{43}$/)

/** Mostly `valid`, sometimes one of the others: so about half the values are whole files. */
const mostly = <T>(valid: fc.Arbitrary<T>, ...others: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ arbitrary: valid, weight: 12 }, ...others)

const jwk = (d: boolean) =>
  fc.record(
    {
      kty: mostly(fc.constant('OKP'), fc.constant('EC')),
      crv: mostly(fc.constant('Ed25519'), fc.constant('X25519')),
      x: mostly(member, fc.string({ maxLength: 50 }), fc.integer()),
      ...(d ? { d: mostly(member, fc.string({ maxLength: 50 }), fc.constant(null)) } : {}),
      kid: mostly(fc.string(), fc.integer()),
      alg: mostly(fc.string(), fc.constant(undefined), fc.boolean()),
      use: mostly(fc.constant('sig'), fc.constant(null)),
      extra: fc.anything(),
    },
    { requiredKeys: d ? ['kty', 'crv', 'x', 'd'] : ['kty', 'crv', 'x'] },
  )

/** A value near a valid identity file: each member valid, missing, or of another type or shape. */
const nearFile = fc.record(
  {
    principal: mostly(fc.constant('did:key:z6Mkexample'), fc.constant('did:web:x'), fc.integer()),
    hub: mostly(fc.constant('http://127.0.0.1:8080/.well-known/agent-net'), fc.integer()),
    publicKeyJwk: mostly(jwk(false), fc.constant(null), fc.array(fc.string())),
    privateKeyJwk: mostly(jwk(true), fc.string()),
    createdAt: mostly(fc.constant('2026-12-01T00:00:00.000Z'), fc.boolean()),
    name: fc.oneof(fc.constant('planner'), fc.string({ maxLength: 70 }), fc.constant(' x')),
    other: fc.anything(),
  },
  { requiredKeys: ['principal', 'hub', 'publicKeyJwk', 'privateKeyJwk', 'createdAt'] },
)

test('the identity file shape check answers as the IdentityFile schema does', () => {
  let whole = 0
  fc.assert(
    fc.property(fc.oneof(nearFile, fc.anything()), (value) => {
      const parsed = IdentityFile.safeParse(value)
      const read = readIdentityFile(value)
      assert.equal(read !== undefined, parsed.success, fc.stringify(value))
      if (parsed.success) {
        whole++
        assert.deepEqual(read, parsed.data)
      }
    }),
    { numRuns: 2000 },
  )
  assert.ok(whole > 100, `only ${whole} whole files were tried`)
  const valid = {
    principal: 'did:key:z6Mkexample',
    hub: 'http://127.0.0.1:8080/.well-known/agent-net',
    publicKeyJwk: { kty: 'OKP', crv: 'Ed25519', x: 'a'.repeat(43) },
    privateKeyJwk: { kty: 'OKP', crv: 'Ed25519', x: 'a'.repeat(43), d: 'b'.repeat(43) },
    createdAt: '2026-12-01T00:00:00.000Z',
    name: 'planner',
  }
  assert.deepEqual(readIdentityFile({ ...valid, more: 1 }), IdentityFile.parse(valid))
})

test('a display label is checked as AgentLabel checks it', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 70 }),
        fc.string({ unit: 'grapheme', maxLength: 70 }),
        fc.string({ unit: 'binary', maxLength: 70 }),
        fc.anything(),
      ),
      (value) => {
        assert.equal(isAgentLabel(value), AgentLabel.safeParse(value).success, fc.stringify(value))
      },
    ),
    { numRuns: 2000 },
  )
})
