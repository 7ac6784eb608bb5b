import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { generateKeyPair, handoffDigest } from '@baton/context'
import { contextCommand } from './context-command.js'

const PLANNER = 'spiffe://a.example/agent/planner'
const CODER = 'spiffe://b.example/agent/coder'
const TESTER = 'spiffe://b.example/agent/tester'
const T0 = 1_793_000_000

let dir = ''
const file = (name: string) => path.join(dir, name)

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await contextCommand(argv, {
    stdout: (s) => {
      out += s
    },
    stderr: (s) => {
      err += s
    },
  })
  return { code, out, err }
}

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'baton-context-cli-'))
  const trust: Record<string, unknown> = {}
  for (const [name, id] of [
    ['planner', PLANNER],
    ['coder', CODER],
    ['tester', TESTER],
  ] as const) {
    const kp = generateKeyPair()
    await writeFile(file(`${name}.jwk`), JSON.stringify(kp.privateJwk))
    trust[id] = kp.publicJwk
  }
  await writeFile(file('trust.json'), JSON.stringify(trust))
})

after(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('baton context', () => {
  test('offer, verify, status and digest round trip', async () => {
    const offer = await cli(
      'offer',
      '--key',
      file('planner.jwk'),
      '--iss',
      PLANNER,
      '--aud',
      CODER,
      '--dialog',
      'ctx-7c1e',
      '--task',
      'task-42',
      '--iat',
      String(T0),
    )
    assert.equal(offer.code, 0, offer.err)
    const handoff = JSON.parse(offer.out)
    assert.equal(typeof handoff.offer, 'string')
    await writeFile(file('h1.json'), offer.out)

    const ok = await cli(
      'verify',
      '--handoff-file',
      file('h1.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      CODER,
      '--now',
      String(T0 + 1),
      '--dialog',
      'ctx-7c1e',
    )
    assert.equal(ok.code, 0, ok.out)
    const v = JSON.parse(ok.out)
    assert.equal(v.ok, true)
    assert.equal(v.digest, handoffDigest(handoff.offer))

    const status = await cli(
      'status',
      '--key',
      file('coder.jwk'),
      '--iss',
      CODER,
      '--offer-file',
      file('h1.json'),
      '--state',
      'accepted',
      '--iat',
      String(T0 + 2),
    )
    assert.equal(status.code, 0, status.err)
    await writeFile(file('s1.json'), status.out)
    const sv = await cli(
      'verify',
      '--status-file',
      file('s1.json'),
      '--offer-file',
      file('h1.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      PLANNER,
      '--now',
      String(T0 + 3),
    )
    assert.equal(sv.code, 0, sv.out)
    assert.equal(JSON.parse(sv.out).offer, v.digest)

    const d = await cli('digest', file('h1.json'))
    assert.equal(d.code, 0)
    assert.equal(d.out.trim(), v.digest)
    await writeFile(file('offer.jws'), `${handoff.offer}\n`)
    assert.equal((await cli('digest', file('offer.jws'))).out.trim(), v.digest)
  })

  test('a chained offer carries the chain; verify reports it', async () => {
    const first = await cli(
      'offer',
      '--key',
      file('planner.jwk'),
      '--iss',
      PLANNER,
      '--aud',
      CODER,
      '--dialog',
      'd',
      '--iat',
      String(T0),
    )
    await writeFile(file('up.json'), first.out)
    const second = await cli(
      'offer',
      '--key',
      file('coder.jwk'),
      '--iss',
      CODER,
      '--aud',
      TESTER,
      '--dialog',
      'd',
      '--iat',
      String(T0 + 1),
      '--chain-file',
      file('up.json'),
    )
    assert.equal(second.code, 0, second.err)
    const h = JSON.parse(second.out)
    assert.equal(h.chain.length, 1)
    await writeFile(file('down.json'), second.out)
    const r = await cli(
      'verify',
      '--handoff-file',
      file('down.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      TESTER,
      '--now',
      String(T0 + 2),
      '--require-full-chain',
    )
    assert.equal(r.code, 0, r.out)
    assert.equal(JSON.parse(r.out).origin, PLANNER)
  })

  test('a refusal exits 1 with the reason code', async () => {
    const offer = await cli(
      'offer',
      '--key',
      file('planner.jwk'),
      '--iss',
      PLANNER,
      '--aud',
      CODER,
      '--dialog',
      'd',
      '--iat',
      String(T0),
      '--ttl',
      '60',
    )
    await writeFile(file('h2.json'), offer.out)
    const stale = await cli(
      'verify',
      '--handoff-file',
      file('h2.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      CODER,
      '--now',
      String(T0 + 500),
    )
    assert.equal(stale.code, 1)
    assert.equal(JSON.parse(stale.out).reason, 'stale')
    const wrong = await cli(
      'verify',
      '--handoff-file',
      file('h2.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      TESTER,
      '--now',
      String(T0),
    )
    assert.equal(JSON.parse(wrong.out).reason, 'wrong-audience')
    // seed 003: a lifetime over the maximum fails the freshness check, reason stale
    const long = await cli(
      'verify',
      '--handoff-file',
      file('h2.json'),
      '--trust',
      file('trust.json'),
      '--aud',
      CODER,
      '--now',
      String(T0),
      '--max-lifetime',
      '30',
    )
    assert.equal(long.code, 1)
    assert.deepEqual(
      [JSON.parse(long.out).reason, JSON.parse(long.out).check],
      ['stale', 'freshness'],
    )
    const badStatus = await cli(
      'status',
      '--key',
      file('planner.jwk'),
      '--iss',
      PLANNER,
      '--offer-file',
      file('h2.json'),
      '--state',
      'accepted',
    )
    assert.equal(badStatus.code, 1)
  })

  test('bad usage exits 64', async () => {
    assert.equal((await cli()).code, 64)
    assert.equal((await cli('sign')).code, 64)
    assert.equal((await cli('offer', '--iss', PLANNER)).code, 64)
    assert.equal((await cli('offer', '--unknown-flag')).code, 64)
    assert.equal(
      (
        await cli(
          'status',
          '--key',
          file('coder.jwk'),
          '--iss',
          CODER,
          '--offer-file',
          file('h1.json'),
          '--state',
          'done',
        )
      ).code,
      64,
    )
    assert.equal((await cli('digest')).code, 64)
    assert.equal(
      (
        await cli(
          'verify',
          '--trust',
          file('trust.json'),
          '--aud',
          CODER,
          '--now',
          'soon',
          '--handoff-file',
          file('h1.json'),
        )
      ).code,
      64,
    )
    assert.equal((await cli('--help')).code, 0)
  })
})
