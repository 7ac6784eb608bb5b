import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient } from '@baton/client'
import { defineContract } from '@baton/protocol'
import pino from 'pino'
import { z } from 'zod'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { signatureDemand } from '../src/identity/http.js'
import { registerHttpOperations } from '../src/ops/http.js'
import { bind, type Operation } from '../src/ops/operation.js'
import { call, testStores } from './support.js'

// Who must sign is the route's declaration, never its URL: a route under /v1 declared
// `auth: 'none'` is asked for nothing, one outside it declared `auth: 'signature'` admits.

test('the signature hook decides from the declaration alone', () => {
  assert.equal(signatureDemand({ auth: 'none' }, false), 'none')
  assert.equal(signatureDemand({ auth: 'handoff-token' }, false), 'none')
  assert.equal(signatureDemand({ auth: 'operator' }, false), 'none')
  assert.equal(signatureDemand({ auth: 'signature' }, false), 'admit')
  assert.equal(signatureDemand({ auth: 'signature' }, true), 'admit')
  // A signature sent where none is declared is still checked, so it cannot be moved there.
  assert.equal(signatureDemand({ auth: 'none' }, true), 'verify')
  assert.equal(signatureDemand(undefined, true), 'verify')
  assert.equal(signatureDemand({}, false), 'none')
  assert.equal(signatureDemand({ optionalSignature: true }, false), 'none')
  assert.equal(signatureDemand({ optionalSignature: true }, true), 'admit')
})

const Who = z.object({ principal: z.string().nullable() })
const whoami = (name: string, path: string, auth: Operation['auth'], exempt = false) =>
  bind(
    defineContract({
      name,
      summary: name,
      tags: ['test'],
      method: 'GET',
      path,
      auth,
      ...(exempt ? { admissionExempt: true } : {}),
      output: Who,
      errors: [],
      tool: false,
    }),
    async (_ctx, caller) => ({ principal: caller.principal?.principal ?? null }),
  )

const TINY = [
  whoami('openUnderV1', '/v1/test-open', 'none'),
  whoami('signedOutside', '/test/signed', 'signature'),
  whoami('exemptOutside', '/test/exempt', 'signature', true),
]

for (const store of testStores) {
  describe(`routes judged by their declared auth (${store.name})`, () => {
    let hub: RunningHub
    let drop: () => Promise<void>
    let agent: SignedClient
    before(async () => {
      const db = await store.fresh()
      drop = db.drop
      const config = loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        BATON_ADMISSION: 'approval',
        ...db.env,
      })
      hub = await startHub(config, {
        log: pino({ level: 'silent' }),
        extend: (app, ctx) => registerHttpOperations(app, ctx, TINY),
      })
      agent = await SignedClient.connect(
        `${hub.url}/.well-known/agent-net`,
        createIdentity(hub.url),
        { maxRetryWaitMs: 0 },
      )
    })
    after(async () => {
      await hub.stop()
      await drop()
    })

    test('a route under /v1 declared `none` is not asked for a signature', async () => {
      const res = await call(hub, 'GET', '/v1/test-open')
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { principal: null })
    })

    test('a route outside /v1 declared `signature` is refused unsigned', async () => {
      const res = await call(hub, 'GET', '/test/signed')
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'signature_missing')
    })

    test('a route outside /v1 declared `signature` enrols and admits its signer', async () => {
      // Admission by approval: the new key enrols pending, and is refused as pending.
      const pending = await agent.request<{ code: string }>('GET', '/test/signed')
      assert.equal(pending.status, 403)
      assert.equal(pending.body.code, 'admission_pending')
      // Declared exempt, it answers its pending signer (as `GET /v1/me` does).
      const exempt = await agent.request<{ principal: string }>('GET', '/test/exempt')
      assert.equal(exempt.status, 200)
      assert.equal(exempt.body.principal, agent.principal)
    })
  })
}
