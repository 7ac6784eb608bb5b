import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { type AddressInfo, createServer as createTcpServer } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { exchange, sendRequest } from './transport.js'

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void

/** A loopback server whose handler each test sets, counting the connections it accepts. */
async function loopback(): Promise<{
  url: string
  server: Server
  connections: () => number
  handle: (h: Handler) => void
}> {
  let handler: Handler = (_req, _body, res) => res.end()
  let connections = 0
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => handler(req, Buffer.concat(chunks), res))
  })
  server.on('connection', () => connections++)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    connections: () => connections,
    handle: (h) => {
      handler = h
    },
  }
}

describe('the keep-alive transport', () => {
  let hub: Awaited<ReturnType<typeof loopback>>
  before(async () => {
    hub = await loopback()
  })
  after(() => {
    hub.server.closeAllConnections()
    hub.server.close()
  })

  test('answers status, headers read as a Headers reads them, and the parsed body', async () => {
    hub.handle((req, body, res) => {
      res.setHeader('Retry-After', '3')
      res.setHeader('X-Seen', ['a', 'b'])
      res.setHeader('content-type', 'application/json')
      res.statusCode = 201
      res.end(
        JSON.stringify({
          method: req.method,
          body: body.toString(),
          type: req.headers['content-type'],
        }),
      )
    })
    const answer = await sendRequest<{ method: string; body: string; type: string }>({
      url: `${hub.url}/x`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"n":1}'),
    })
    assert.equal(answer.status, 201)
    assert.deepEqual(answer.body, { method: 'POST', body: '{"n":1}', type: 'application/json' })
    assert.equal(answer.headers.get('RETRY-AFTER'), '3')
    assert.equal(answer.headers.get('x-seen'), 'a, b')
    assert.equal(answer.headers.get('absent'), null)
    assert.equal(answer.headers.has('Content-Type'), true)
    const names: string[] = []
    answer.headers.forEach((_value, name) => {
      names.push(name)
    })
    assert.deepEqual(names, [...names].sort())
    assert.ok(names.includes('retry-after'))
  })

  test('an empty body answers undefined, and a body that is no JSON an internal error body', async () => {
    hub.handle((_req, _body, res) => {
      res.statusCode = 204
      res.end()
    })
    assert.equal((await sendRequest({ url: hub.url, method: 'GET', headers: {} })).body, undefined)
    hub.handle((_req, _body, res) => {
      res.statusCode = 502
      res.end('\uFEFFbad gateway')
    })
    const answer = await sendRequest({ url: hub.url, method: 'GET', headers: {} })
    assert.equal(answer.status, 502)
    assert.deepEqual(answer.body, { error: 'bad gateway', code: 'internal' })
    assert.equal((await exchange({ url: hub.url, method: 'GET', headers: {} })).text, 'bad gateway')
  })

  test('requests one after another share one connection', async () => {
    hub.handle((_req, _body, res) => res.end('{}'))
    await sendRequest({ url: hub.url, method: 'GET', headers: {} })
    const opened = hub.connections()
    for (let i = 0; i < 5; i++) await sendRequest({ url: hub.url, method: 'GET', headers: {} })
    assert.equal(hub.connections(), opened)
  })

  test('an upload with progress sends every byte with its length and reports up to the total', async () => {
    let received: { length: number; declared: string | undefined } | undefined
    hub.handle((req, body, res) => {
      received = { length: body.length, declared: req.headers['content-length'] }
      res.end('{"ok":true}')
    })
    const body = Buffer.alloc(1024 * 1024 + 7, 1)
    const reports: [number, number][] = []
    const answer = await sendRequest({
      url: hub.url,
      method: 'PUT',
      headers: {},
      body,
      onUploadProgress: (sent, total) => reports.push([sent, total]),
    })
    assert.deepEqual(answer.body, { ok: true })
    assert.deepEqual(received, { length: body.length, declared: String(body.length) })
    assert.ok(reports.length >= 4, `${reports.length} reports`)
    assert.deepEqual(reports.at(-1), [body.length, body.length])
    const sent = reports.map(([s]) => s)
    assert.deepEqual(
      sent,
      [...sent].sort((a, b) => a - b),
    )
  })

  test('aborting rejects with the signal’s reason, before the request or while it waits', async () => {
    const early = new AbortController()
    early.abort()
    await assert.rejects(
      sendRequest({ url: hub.url, method: 'GET', headers: {}, signal: early.signal }),
      (error: Error) => error.name === 'AbortError',
    )
    let held: ServerResponse | undefined
    const arrived = new Promise<void>((resolve) =>
      hub.handle((_req, _body, res) => {
        held = res
        resolve()
      }),
    )
    const leave = new AbortController()
    const pending = sendRequest({ url: hub.url, method: 'GET', headers: {}, signal: leave.signal })
    await arrived
    const closed = once(held!, 'close')
    leave.abort(new Error('left'))
    await assert.rejects(pending, { message: 'left' })
    await closed
  })

  test('a hub that cannot be reached rejects as fetch does: fetch failed, with the cause', async () => {
    const probe = createServer()
    probe.listen(0, '127.0.0.1')
    await once(probe, 'listening')
    const { port } = probe.address() as AddressInfo
    probe.close()
    await once(probe, 'close')
    await assert.rejects(
      sendRequest({ url: `http://127.0.0.1:${port}/`, method: 'GET', headers: {} }),
      (error: Error & { cause?: { code?: string } }) =>
        error instanceof TypeError &&
        error.message === 'fetch failed' &&
        error.cause?.code === 'ECONNREFUSED',
    )
  })

  test('redirects are followed as fetch follows them', async () => {
    const other = await loopback()
    try {
      const seen: string[] = []
      const record: Handler = (req, body, res) => {
        seen.push(`${req.method} ${req.url} ${body.length} ${req.headers.authorization ?? '-'}`)
        if (req.url === '/307') res.writeHead(307, { location: '/kept' }).end()
        else if (req.url === '/303') res.writeHead(303, { location: '/got' }).end()
        else if (req.url === '/away') res.writeHead(302, { location: `${other.url}/there` }).end()
        else res.end('{"ok":true}')
      }
      hub.handle(record)
      other.handle(record)
      const auth = { authorization: 'Bearer t' }
      const body = Buffer.from('{"n":1}')
      for (const path of ['/307', '/303']) {
        const answer = await sendRequest({
          url: hub.url + path,
          method: 'POST',
          headers: auth,
          body,
        })
        assert.deepEqual(answer.body, { ok: true })
      }
      await sendRequest({ url: `${hub.url}/away`, method: 'GET', headers: auth })
      assert.deepEqual(seen, [
        'POST /307 7 Bearer t',
        'POST /kept 7 Bearer t',
        'POST /303 7 Bearer t',
        'GET /got 0 Bearer t',
        'GET /away 0 Bearer t',
        'GET /there 0 -',
      ])
    } finally {
      other.server.closeAllConnections()
      other.server.close()
    }
  })

  test('a given fetch sends the request instead, with the same answer', async () => {
    hub.handle((_req, body, res) => {
      res.setHeader('etag', '"1"')
      res.end(JSON.stringify({ got: body.toString() }))
    })
    const seen: string[] = []
    const answer = await sendRequest(
      { url: `${hub.url}/f`, method: 'POST', headers: {}, body: Buffer.from('hi') },
      (input, init) => {
        seen.push(`${init?.method} ${String(input)}`)
        return fetch(input, init)
      },
    )
    assert.deepEqual(seen, [`POST ${hub.url}/f`])
    assert.deepEqual(answer.body, { got: 'hi' })
    assert.equal(answer.headers.get('ETag'), '"1"')
  })
})

test('a kept-alive connection the server dropped: an idempotent request goes again, a POST fails', async () => {
  // Answers the first request on each connection, and drops the connection at the second.
  const server = createTcpServer((socket) => {
    let requests = 0
    socket.on('data', (chunk) => {
      if (!chunk.toString('latin1').includes('\r\n\r\n')) return
      requests++
      if (requests > 1) {
        socket.resetAndDestroy()
        return
      }
      socket.write(
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}',
      )
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  try {
    assert.equal((await sendRequest({ url, method: 'GET', headers: {} })).status, 200)
    assert.equal((await sendRequest({ url, method: 'GET', headers: {} })).status, 200)
    await assert.rejects(sendRequest({ url, method: 'POST', headers: {} }), {
      message: 'fetch failed',
    })
  } finally {
    server.close()
  }
})
