import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { call, signedAgent, startTestHub, type TestHub, testStores } from '../support.js'

const H = '/services/v1/handoff'
const OPEN = {
  BATON_ADMISSION: 'open',
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
  BATON_HANDOFF_DAILY_QUOTA: '100000',
}

/** `depth` arrays nested in each other, as JSON text. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`

/** A JSON object literal holding a `__proto__` member, as the wire carries it. */
const proto = '{"__proto__":{"admin":true},"x":1}'

/** The JSON text of a valid snapshot request whose toolState holds `toolState` (JSON text). */
const snapshotBody = (toolState: string) =>
  `{"snapshot":{"systemPrompt":"s","messages":[],"toolState":{"t":${toolState}}}}`

for (const store of testStores) {
  describe(`one guard for every JSON body (${store.name})`, () => {
    let hub: TestHub
    let a: SignedClient
    let b: SignedClient
    before(async () => {
      hub = await startTestHub(store, OPEN)
      a = await signedAgent(hub)
      b = await signedAgent(hub)
    })
    after(() => hub.close())

    const inbox = async (who: SignedClient) => {
      const res = await who.request<{ messages: { body: unknown }[] }>(
        'GET',
        '/v1/messages?after=0&limit=100',
      )
      assert.equal(res.status, 200)
      return res.body.messages
    }
    const transfers = async () => {
      const res = await a.request<{ transfers: unknown[] }>('GET', '/v1/transfers')
      assert.equal(res.status, 200)
      return res.body.transfers
    }
    const resources = async () => {
      const res = await a.request<{ resources: unknown[] }>('GET', '/v1/resources')
      assert.equal(res.status, 200)
      return res.body.resources
    }

    test('__proto__ anywhere in a body is refused with json_key_forbidden and stores nothing', async () => {
      const handoff = await call(hub, 'POST', H, { raw: `{"payload":${proto}}` })
      assert.equal(handoff.status, 400)
      assert.equal(handoff.body.code, 'json_key_forbidden')
      assert.equal(handoff.body.field, 'payload.__proto__')

      const resource = await a.request<{ code: string }>(
        'POST',
        '/v1/resources',
        `{"namespace":"n","kind":"k","data":${proto}}`,
      )
      assert.equal(resource.status, 400)
      assert.equal(resource.body.code, 'json_key_forbidden')
      assert.deepEqual(await resources(), [])

      const snapshot = await a.request<{ code: string }>(
        'POST',
        '/v1/transfers',
        snapshotBody(proto),
      )
      assert.equal(snapshot.status, 400)
      assert.equal(snapshot.body.code, 'json_key_forbidden')
      assert.deepEqual(await transfers(), [])

      const topLevel = await a.request<{ code: string }>(
        'POST',
        '/v1/messages',
        `{"__proto__":{},"recipient":${JSON.stringify(b.principal)},"body":1,"idempotencyKey":"k0"}`,
      )
      assert.equal(topLevel.status, 400)
      assert.equal(topLevel.body.code, 'json_key_forbidden')
      assert.deepEqual(await inbox(b), [])
    })

    test('a __proto__ body under a used idempotency key is refused, not answered as a repeat', async () => {
      const recipient = JSON.stringify(b.principal)
      const first = await a.request<{ id: string }>(
        'POST',
        '/v1/messages',
        `{"recipient":${recipient},"body":{"x":1},"idempotencyKey":"k1"}`,
      )
      assert.equal(first.status, 201)
      const other = await a.request<{ code: string }>(
        'POST',
        '/v1/messages',
        `{"recipient":${recipient},"body":${proto},"idempotencyKey":"k1"}`,
      )
      assert.equal(other.status, 400)
      assert.equal(other.body.code, 'json_key_forbidden')
      const messages = await inbox(b)
      assert.equal(messages.length, 1)
      assert.deepEqual(messages[0]!.body, { x: 1 })
    })

    test('NUL in a note, home content or idempotencyKey is invalid_text, the same on both stores', async () => {
      const note = await call(hub, 'POST', H, { body: { payload: {}, note: 'a\u0000b' } })
      assert.equal(note.status, 400)
      assert.equal(note.body.code, 'invalid_text')
      assert.equal(note.body.field, 'note')

      const home = await a.request<{ code: string; field: string }>('PUT', '/v1/home/file', {
        path: 'n.txt',
        expectedRevision: 0,
        content: 'x\u0000y',
      })
      assert.equal(home.status, 400)
      assert.equal(home.body.code, 'invalid_text')
      assert.equal(home.body.field, 'content')
      const read = await a.request<{ code: string }>('GET', '/v1/home/file?path=n.txt')
      assert.equal(read.body.code, 'home_file_not_found')

      const key = await a.request<{ code: string }>('POST', '/v1/messages', {
        recipient: b.principal,
        body: { n: 1 },
        idempotencyKey: 'k\u0000',
      })
      assert.equal(key.status, 400)
      assert.equal(key.body.code, 'invalid_text')
      assert.equal((await inbox(b)).filter((m) => (m.body as { n?: number }).n === 1).length, 0)

      const inKey = await call(hub, 'POST', H, { raw: '{"payload":{"a\\u0000":1}}' })
      assert.equal(inKey.status, 400)
      assert.equal(inKey.body.code, 'invalid_text')
    })

    test('NUL in a path or query parameter is invalid_text, never a database error', async () => {
      for (const path of [
        '/v1/resources/rs_%00',
        '/v1/resources?namespace=%00',
        '/v1/home/file?path=a%00b',
        '/v1/transfers/tr_%00',
      ]) {
        const res = await a.request<{ code: string }>('GET', path)
        assert.equal(res.status, 400, path)
        assert.equal(res.body.code, 'invalid_text', path)
      }
      const read = await call(hub, 'GET', `${H}/h_%00`, { token: 'x' })
      assert.equal(read.status, 400)
      assert.equal(read.body.code, 'invalid_text')
    })

    test('a lone surrogate is invalid_text; a paired one is stored exactly', async () => {
      const lone = await call(hub, 'POST', H, { raw: '{"payload":{"s":"\\ud800"}}' })
      assert.equal(lone.status, 400)
      assert.equal(lone.body.code, 'invalid_text')
      assert.equal(lone.body.field, 'payload.s')
      const low = await a.request<{ code: string }>('PUT', '/v1/home/file', {
        path: 's.txt',
        expectedRevision: 0,
        content: 'x\udc00',
      })
      assert.equal(low.body.code, 'invalid_text')

      const pair = await call(hub, 'POST', H, { raw: '{"payload":{"s":"\\ud83d\\ude00"}}' })
      assert.equal(pair.status, 201)
      const back = await call(hub, 'GET', `${H}/${pair.body.handoff_id}`, {
        token: pair.body.owner_token as string,
      })
      assert.deepEqual(back.body.payload, { s: '😀' })
    })

    test('a body that is not UTF-8 is invalid_json, not stored with replacement characters', async () => {
      const bytes = Buffer.concat([
        Buffer.from('{"payload":{"s":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}}'),
      ])
      const res = await fetch(`${hub.url}${H}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bytes,
      })
      assert.equal(res.status, 400)
      assert.equal(((await res.json()) as { code: string }).code, 'invalid_json')

      const message = await a.request<{ code: string }>(
        'POST',
        '/v1/messages',
        Buffer.concat([
          Buffer.from(`{"recipient":${JSON.stringify(b.principal)},"body":"`),
          Buffer.from([0xc3, 0x28]),
          Buffer.from('","idempotencyKey":"utf"}'),
        ]),
      )
      assert.equal(message.status, 400)
      assert.equal(message.body.code, 'invalid_json')
    })

    test('toolState nested 5,000 deep is refused (400, max_depth), on snapshots as on every route', async () => {
      const snapshot = await a.request<{ code: string; max_depth: number }>(
        'POST',
        '/v1/transfers',
        snapshotBody(nested(5000)),
      )
      assert.equal(snapshot.status, 400)
      assert.equal(snapshot.body.code, 'invalid_request')
      assert.equal(snapshot.body.max_depth, 128)
      assert.deepEqual(await transfers(), [])

      const payload = await call(hub, 'POST', H, { raw: `{"payload":${nested(5000)}}` })
      assert.equal(payload.status, 400)
      assert.equal(payload.body.code, 'invalid_request')
      const mcp = await call(hub, 'POST', '/mcp', {
        raw: nested(200),
        headers: { accept: 'application/json, text/event-stream' },
      })
      assert.equal(mcp.status, 400)
      assert.equal(mcp.body.code, 'invalid_request')

      // Within the limit, deep state is accepted and read back exactly.
      const ok = await a.request<{ transferId: string }>(
        'POST',
        '/v1/transfers',
        snapshotBody(nested(100)),
      )
      assert.equal(ok.status, 201)
      const back = await a.request<{ snapshot: { toolState: { t: unknown } } }>(
        'GET',
        `/v1/transfers/${ok.body.transferId}/snapshot`,
      )
      assert.equal(JSON.stringify(back.body.snapshot.toolState.t), nested(100))
    })

    test('a body of more elements than BATON_BODY_MAX_ELEMENTS is refused on every face, and one at it is kept', async () => {
      const max = hub.config.bodyMaxElements
      const items = (n: number) => `[${Array.from({ length: n }, () => '0').join(',')}]`
      const over = await a.request<{ code: string; limit: number }>(
        'POST',
        '/v1/resources',
        `{"namespace":"n","kind":"k/v1","data":${items(max)}}`,
      )
      // Members count as elements beside items: the body's three members and max items are max + 3.
      assert.equal(over.status, 413)
      assert.equal(over.body.code, 'body_too_many_elements')
      assert.deepEqual(await resources(), [])
      const handoff = await call(hub, 'POST', H, { raw: `{"payload":${items(max)}}` })
      assert.equal(handoff.status, 413)
      assert.equal(handoff.body.code, 'body_too_many_elements')
      const mcp = await call(hub, 'POST', '/mcp', {
        raw: items(max + 1),
        headers: { accept: 'application/json, text/event-stream' },
      })
      assert.equal(mcp.status, 413)
      assert.equal(mcp.body.code, 'body_too_many_elements')
      const at = await a.request<{ id: string }>(
        'POST',
        '/v1/resources',
        `{"namespace":"n","kind":"k/v1","data":${items(max - 3)}}`,
      )
      assert.equal(at.status, 201, JSON.stringify(at.body))
      assert.equal((await resources()).length, 1)
    })

    test('an answer sent before the body was read closes the connection, so nothing stalls', async () => {
      const big = Buffer.from(`{"data":"${'x'.repeat(2 * 1024 * 1024)}"}`)
      const res = await a.request<{ code: string }>('POST', '/v1/resources', big)
      assert.equal(res.status, 413)
      assert.equal(res.body.code, 'body_too_large')
      assert.equal(res.headers.get('connection'), 'close')
      for (let i = 0; i < 3; i++) {
        assert.equal((await a.request('GET', '/v1/me')).status, 200)
      }
    })

    test('a message body at its own limit of 64 levels still passes the body guard', async () => {
      const res = await a.request<{ id: string }>(
        'POST',
        '/v1/messages',
        `{"recipient":${JSON.stringify(b.principal)},"body":${nested(64)},"idempotencyKey":"deep"}`,
      )
      assert.equal(res.status, 201)
    })
  })
}

describe('HTTP method semantics', () => {
  let hub: TestHub
  let a: SignedClient
  before(async () => {
    hub = await startTestHub(testStores[0]!, OPEN)
    a = await signedAgent(hub)
  })
  after(() => hub.close())

  test('a wrong method on a known path is 405 method_not_allowed with Allow', async () => {
    const health = await call(hub, 'PUT', '/healthz')
    assert.equal(health.status, 405)
    assert.equal(health.body.code, 'method_not_allowed')
    assert.equal(health.headers.get('allow'), 'GET, HEAD')

    const item = await call(hub, 'DELETE', `${H}/h_x/accepted`)
    assert.equal(item.status, 405)
    assert.equal(item.headers.get('allow'), 'POST')

    const signed = await a.request<{ code: string }>('DELETE', '/v1/resources')
    assert.equal(signed.status, 405)
    assert.equal(signed.body.code, 'method_not_allowed')
    assert.equal(signed.headers.get('allow'), 'GET, HEAD, POST')
  })

  test('an unknown path is still 404 not_found', async () => {
    const res = await call(hub, 'GET', '/nowhere')
    assert.equal(res.status, 404)
    assert.equal(res.body.code, 'not_found')
  })

  test('GET /mcp answers 405 with Allow: POST, the status its handler sets', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await call(hub, method, '/mcp')
      assert.equal(res.status, 405, method)
      assert.equal(res.body.code, 'method_not_allowed')
      assert.equal(res.headers.get('allow'), 'POST')
    }
  })
})
