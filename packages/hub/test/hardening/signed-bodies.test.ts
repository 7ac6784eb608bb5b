import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { contentDigest, createIdentity, type Identity, signRequest } from '@baton/client'
import { call, exited, serveProcess, startTestHub, type TestHub, testStores } from '../support.js'
import { sendRequest } from './wire.js'

const MiB = 1024 * 1024

/** A peak or current memory figure of a process from /proc, in bytes. */
function memoryOf(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`)
  return Number(m[1]) * 1024
}

/** A raw header section; the signature fields, when given, are those of a signed request. */
function head(
  url: string,
  method: string,
  target: string,
  headers: Record<string, string>,
): string {
  const { host } = new URL(url)
  const lines = [`${method} ${target} HTTP/1.1`, `host: ${host}`]
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
  return `${lines.join('\r\n')}\r\n\r\n`
}

/** The headers of a request signed by `id` for `body`, to send with any body at all. */
function signedHeaders(
  url: string,
  id: Identity,
  method: string,
  target: string,
  body: Buffer | undefined,
): Record<string, string> {
  const signed = signRequest({
    method,
    url: url + target,
    body,
    privateKey: id.privateKey,
    keyid: id.principal,
  })
  const { host: _host, ...rest } = signed.headers
  return rest
}

describe('a body is read only after its request is signed and admitted', () => {
  test('32 concurrent oversized bodies that are unsigned, badly signed or unadmitted are refused unread, and memory stays bounded', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-bodies-'))
    // The snapshot route takes up to 32 MiB, so each body here is within its limit.
    const { url, child } = await serveProcess({
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'approval',
      BATON_ENROL_PER_ADDRESS_PER_HOUR: '1000',
    })
    try {
      const pid = child.pid!
      for (let i = 0; i < 5; i++) await call({ url }, 'GET', '/.well-known/agent-net')
      const baseline = memoryOf(pid, 'VmHWM')
      const size = 31 * MiB
      const length = { 'content-type': 'application/json', 'content-length': String(size) }
      const kinds = Array.from({ length: 32 }, (_, i) => i % 3)
      const outcomes = await Promise.all(
        kinds.map((kind) => {
          if (kind === 0) return sendRequest(url, head(url, 'POST', '/v1/transfers', length), size)
          const id = createIdentity(url)
          const signed = signedHeaders(url, id, 'POST', '/v1/transfers', Buffer.from('{}'))
          if (kind === 1) {
            // The signature bytes of another request: the signature does not verify.
            const other = signedHeaders(url, id, 'POST', '/v1/other', Buffer.from('{}'))
            signed.signature = other.signature!
          }
          return sendRequest(
            url,
            head(url, 'POST', '/v1/transfers', { ...signed, 'content-length': String(size) }),
            size,
          )
        }),
      )
      const growth = memoryOf(pid, 'VmHWM') - baseline
      for (const [i, o] of outcomes.entries()) {
        // A well-signed request of a key that is not admitted is refused as pending (403).
        const expected = kinds[i] === 2 ? 403 : 401
        assert.equal(o.status, expected, `connection ${i}: ${o.text.slice(0, 200)}`)
        assert.ok(o.sent < size, `connection ${i} was read to the end (${o.sent} bytes)`)
      }
      assert.ok(growth < 150 * MiB, `peak RSS grew by ${Math.round(growth / MiB)} MiB`)
    } finally {
      child.kill('SIGTERM')
      await exited(child)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

for (const store of testStores) {
  describe(`signed bodies are checked as they stream (${store.name})`, () => {
    let hub: TestHub
    let id: Identity
    const limit = 8 * 1024
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_BODY_LIMIT_BYTES: String(limit),
      })
      id = createIdentity(hub.url)
    })
    after(() => hub.close())

    const messages = async () =>
      Number(
        (
          await hub.ctx.database.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      )

    test('a Content-Length over the route limit is refused (413) before any byte is read', async () => {
      // Admitted first, so only the size can refuse the request.
      const me = signedHeaders(hub.url, id, 'GET', '/v1/me', undefined)
      assert.equal((await sendRequest(hub.url, head(hub.url, 'GET', '/v1/me', me), 0)).status, 200)
      const body = Buffer.from(
        JSON.stringify({ recipient: id.principal, body: { n: 1 }, idempotencyKey: 'k-00000001' }),
      )
      const signed = signedHeaders(hub.url, id, 'POST', '/v1/messages', body)
      const o = await sendRequest(
        hub.url,
        head(hub.url, 'POST', '/v1/messages', { ...signed, 'content-length': String(limit + 1) }),
        0,
      )
      assert.equal(o.status, 413, o.text.slice(0, 300))
      assert.match(o.text, /"code":"body_too_large"/)
      assert.equal(await messages(), 0)
    })

    test('a chunked body is cut at the route limit (413)', async () => {
      const body = Buffer.alloc(limit * 4, 0x20)
      const signed = signedHeaders(hub.url, id, 'POST', '/v1/messages', body)
      const chunk = body.subarray(0, 1024)
      const framed = Buffer.concat([Buffer.from('400\r\n'), chunk, Buffer.from('\r\n')])
      const o = await sendRequest(
        hub.url,
        head(hub.url, 'POST', '/v1/messages', { ...signed, 'transfer-encoding': 'chunked' }),
        framed.length * 64,
        framed,
      )
      assert.equal(o.status, 413, o.text.slice(0, 300))
      assert.equal(await messages(), 0)
    })

    test('a body that does not match its Content-Digest is refused at its end (digest_mismatch) and changes nothing', async () => {
      const body = Buffer.from(
        JSON.stringify({ recipient: id.principal, body: { n: 1 }, idempotencyKey: 'k-00000001' }),
      )
      const signed = signedHeaders(hub.url, id, 'POST', '/v1/messages', body)
      const other = Buffer.from(body.toString().replace('"n":1', '"n":2'))
      const o = await sendRequest(
        hub.url,
        head(hub.url, 'POST', '/v1/messages', {
          ...signed,
          'content-length': String(other.length),
        }),
        other.length,
        other,
      )
      assert.equal(o.status, 401, o.text.slice(0, 300))
      assert.match(o.text, /"code":"digest_mismatch"/)
      assert.equal(await messages(), 0)
    })

    test('a body without a Content-Digest is refused before it is read', async () => {
      const body = Buffer.from('{}')
      const signed = signedHeaders(hub.url, id, 'POST', '/v1/messages', undefined)
      const o = await sendRequest(
        hub.url,
        head(hub.url, 'POST', '/v1/messages', {
          ...signed,
          'content-type': 'application/json',
          'content-length': String(body.length),
        }),
        body.length,
        body,
      )
      assert.equal(o.status, 401, o.text.slice(0, 300))
      assert.match(o.text, /"code":"signature_malformed"/)
    })

    test('a signed chunked body that matches its digest is accepted', async () => {
      const body = Buffer.from(
        JSON.stringify({ recipient: id.principal, body: { n: 3 }, idempotencyKey: 'k-00000003' }),
      )
      const signed = signedHeaders(hub.url, id, 'POST', '/v1/messages', body)
      assert.equal(signed['content-digest'], contentDigest(body))
      const framed = Buffer.from(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
      const o = await sendRequest(
        hub.url,
        head(hub.url, 'POST', '/v1/messages', {
          ...signed,
          'transfer-encoding': 'chunked',
          connection: 'close',
        }),
        framed.length,
        framed,
      )
      assert.equal(o.status, 201, o.text.slice(0, 300))
      assert.equal(await messages(), 1)
    })
  })
}
