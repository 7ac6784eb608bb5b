import assert from 'node:assert/strict'
import http from 'node:http'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { createIdentity, type Identity, type SignedClient, signRequest } from '@baton/client'
import type { DiscoveryDocument } from '@baton/protocol'
import pino from 'pino'
import { loadConfig } from '../../src/config.js'
import { startHub } from '../../src/hub.js'
import { onceByKey } from '../../src/store/idempotency.js'
import {
  signedAgent,
  startTestHub,
  TEST_ADDRESS_LIMITS,
  type TestHub,
  testStores,
} from '../support.js'

/** Sends a request over node:http exactly as given, Host included. */
function send(
  hubUrl: string,
  req: { method: string; path: string; headers: Record<string, string>; body?: Uint8Array },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(hubUrl)
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers }
    if (req.body) headers['content-length'] = String(req.body.length)
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers,
        setHost: false,
        agent: false,
      },
      (res) => {
        let text = ''
        res.on('data', (c) => {
          text += c
        })
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }),
        )
      },
    )
    r.on('error', reject)
    r.end(req.body)
  })
}

/** A request signed by `id` for `origin` + `path`, with the Host of that origin. */
function signedFor(
  origin: string,
  id: Identity,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body))
  const signed = signRequest({
    method,
    url: origin + path,
    body,
    ...(opts.headers ? { headers: opts.headers } : {}),
    privateKey: id.privateKey,
    keyid: id.principal,
  })
  const headers: Record<string, string> = { host: new URL(origin).host, ...signed.headers }
  return {
    method,
    path,
    headers,
    ...(body ? { body } : {}),
  }
}

const resource = { namespace: 'binding', kind: 'note', data: { n: 1 } }

for (const store of testStores) {
  describe(`what a signature binds (${store.name})`, () => {
    let hub: TestHub
    let a: SignedClient
    let b: SignedClient
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      a = await signedAgent(hub)
      b = await signedAgent(hub)
    })
    after(() => hub.close())

    test('an Idempotency-Key added after signing is refused (401), and nothing is created', async () => {
      const id = createIdentity(hub.url)
      const req = signedFor(hub.url, id, 'POST', '/v1/resources', { body: resource })
      req.headers['idempotency-key'] = 'added-after-signing'
      const res = await send(hub.url, req)
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'signature_malformed')
      assert.deepEqual(res.body.missing, ['idempotency-key'])
      const rows = await hub.ctx.database.db
        .selectFrom('resources')
        .select('id')
        .where('namespace', '=', 'binding')
        .where('owner', '=', id.principal)
        .execute()
      assert.equal(rows.length, 0)
    })

    test('the client covers Idempotency-Key: a repeat answers the first result, a changed key does not verify', async () => {
      const headers = { 'Idempotency-Key': 'client-covers-it-1' }
      const first = await a.request('POST', '/v1/resources', resource, headers)
      assert.equal(first.status, 201, JSON.stringify(first.body))
      const again = await a.request('POST', '/v1/resources', resource, headers)
      assert.equal((again.body as { id: string }).id, (first.body as { id: string }).id)

      const id = createIdentity(hub.url)
      const req = signedFor(hub.url, id, 'POST', '/v1/resources', {
        body: resource,
        headers: { 'idempotency-key': 'client-covers-it-2' },
      })
      assert.match(req.headers['signature-input']!, /"idempotency-key"/)
      req.headers['idempotency-key'] = 'client-covers-it-3'
      const changed = await send(hub.url, req)
      assert.equal(changed.status, 401)
      assert.equal(changed.body.code, 'signature_invalid')
    })

    test('the same Idempotency-Key from another principal is a new request of that principal', async () => {
      const headers = { 'Idempotency-Key': 'shared-key-0001' }
      const mine = await a.request<{ id: string; owner: string }>(
        'POST',
        '/v1/resources',
        resource,
        headers,
      )
      const theirs = await b.request<{ id: string; owner: string }>(
        'POST',
        '/v1/resources',
        resource,
        headers,
      )
      assert.equal(mine.status, 201)
      assert.equal(theirs.status, 201)
      assert.notEqual(theirs.body.id, mine.body.id)
      assert.equal(theirs.body.owner, b.principal)

      // The store itself keeps each principal's answers apart under one scope.
      const { db } = hub.ctx.database
      const q = { scope: 'test.create', key: 'shared-key-0002', request: { n: 1 }, now: 1 }
      const first = await onceByKey(db, { ...q, principal: a.principal }, async () => 'a')
      const other = await onceByKey(db, { ...q, principal: b.principal }, async () => 'b')
      const repeat = await onceByKey(db, { ...q, principal: a.principal }, async () => 'again')
      assert.deepEqual([first, other, repeat], ['a', 'b', 'a'])
    })

    test('a request signed for another hub and sent with its Host is refused', async () => {
      const id = createIdentity(hub.url)
      const foreign = signedFor('https://other.example', id, 'GET', '/v1/me')
      const res = await send(hub.url, foreign)
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'signature_invalid')
      const enrolled = await hub.ctx.database.db
        .selectFrom('principals')
        .select('principal')
        .where('principal', '=', id.principal)
        .execute()
      assert.equal(enrolled.length, 0, 'the refused request enrolled its key')

      const doc = await send(hub.url, {
        method: 'GET',
        path: '/.well-known/agent-net',
        headers: { host: 'other.example' },
      })
      const discovered = doc.body as unknown as DiscoveryDocument
      assert.equal(discovered.apiBase, hub.url)
      assert.deepEqual(discovered.signatures.presentComponents, ['idempotency-key'])
    })

    test('a request signed for the listen address under a loopback name is accepted', async () => {
      const id = createIdentity(hub.url)
      const port = new URL(hub.url).port
      const res = await send(hub.url, signedFor(`http://localhost:${port}`, id, 'GET', '/v1/me'))
      assert.equal(res.status, 200, JSON.stringify(res.body))
    })
  })
}

describe('a hub without BATON_PUBLIC_URL warns at start where clients cannot be told apart', () => {
  async function startupWarnings(env: Record<string, string>): Promise<string[]> {
    const lines: string[] = []
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    })
    const store = await testStores[0]!.fresh()
    const hub = await startHub(
      loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        ...TEST_ADDRESS_LIMITS,
        ...store.env,
        ...env,
      }),
      { log: pino({ level: 'warn' }, sink) },
    )
    await hub.stop()
    await store.drop()
    return lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level === 40 && l.msg.includes('BATON_PUBLIC_URL'))
      .map((l) => l.msg)
  }

  test('behind a trusted proxy it warns; on loopback alone, or with a public URL, it does not', async () => {
    assert.equal((await startupWarnings({ BATON_TRUST_PROXY: '127.0.0.1' })).length, 1)
    assert.equal((await startupWarnings({})).length, 0)
    const pinned = { BATON_TRUST_PROXY: '127.0.0.1', BATON_PUBLIC_URL: 'https://hub.example' }
    assert.equal((await startupWarnings(pinned)).length, 0)
  })
})
