import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  fetchDiscovery,
  MessagesClient,
  messageBodyDigest,
  requestJson,
  type SignedBody,
  SignedClient,
  verifyMessageReceipt,
} from '@baton/client'
import type {
  AckView,
  DiscoveryDocument,
  MessagePageView,
  MessageView,
  SentMessageView,
} from '@baton/protocol'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { main } from '../src/cli/main.js'
import { createMcpServer } from '../src/mcp/server.js'
import { localInvoke } from '../src/ops/local.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { countStatements } from '../src/store/transaction.js'
import {
  call,
  restartableHub,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
  toolAnswer,
} from './support.js'

const ADMIN_TOKEN = 'op-secret-0123456789abcdefghijklmnopqrstuv'
const OPEN = { BATON_ADMISSION: 'open', BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0' }

interface Agent {
  principal: string
  client: SignedClient
  messages: MessagesClient
}

/** A new identity on a hub, enrolled by a signed GET /v1/me (approved at once when admission is open). */
async function agent(hub: { url: string }): Promise<Agent> {
  const client = await signedAgent(hub)
  return { principal: client.principal, client, messages: new MessagesClient(client) }
}

/** seed 000: handoff-notice.json with its placeholders filled in. */
function notice(peer: string, runId: string, taskId: string) {
  return {
    recipient: peer,
    body: { schema: 'net-task-notice/v1', runId, taskId, taskVersion: 1 },
    idempotencyKey: `handoff:${runId}:task:${taskId}:v1`,
  }
}

/** Every message of an inbox, paging with `after` exclusive. */
async function readAll(a: Agent, limit = 100): Promise<MessageView[]> {
  const out: MessageView[] = []
  let after = 0
  for (;;) {
    const page = await a.messages.list({ after, limit })
    out.push(...page.messages)
    if (page.messages.length < limit) return out
    after = page.nextAfter
  }
}

function capture() {
  const out: string[] = []
  const err: string[] = []
  return {
    io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) },
    out,
    err,
  }
}

for (const store of testStores) {
  describe(`messages (${store.name})`, () => {
    let hub: TestHub
    let owner: Agent
    let peer: Agent
    let discovery: DiscoveryDocument
    before(async () => {
      hub = await startTestHub(store, OPEN)
      owner = await agent(hub)
      peer = await agent(hub)
      discovery = await fetchDiscovery(`${hub.url}/.well-known/agent-net`)
    })
    after(async () => {
      await hub?.close()
    })

    test('the seed notice: send answers 201 with id, sequence and receipt; the peer reads and acks it', async () => {
      const sent = await owner.client.request<SentMessageView>(
        'POST',
        '/v1/messages',
        notice(peer.principal, 'run-a1', 'rs_task1'),
      )
      assert.equal(sent.status, 201, JSON.stringify(sent.body))
      assert.match(sent.body.id, /^msg_[A-Za-z0-9_-]{22}$/)
      assert.ok(Number.isSafeInteger(sent.body.sequence) && sent.body.sequence > 0)
      assert.equal(sent.body.sender, owner.principal)
      assert.equal(sent.body.recipient, peer.principal)
      assert.equal(sent.body.bodyDigest, messageBodyDigest(notice('', 'run-a1', 'rs_task1').body))

      const page = await peer.client.request<MessagePageView>(
        'GET',
        '/v1/messages?after=0&limit=20',
      )
      assert.equal(page.status, 200)
      const got = page.body.messages.find((m) => m.id === sent.body.id)
      assert.ok(got, 'the notice is in the peer inbox')
      assert.equal(got.sequence, sent.body.sequence)
      assert.equal(got.sender, owner.principal)
      assert.deepEqual(got.body, notice('', 'run-a1', 'rs_task1').body)
      assert.equal(got.ackedAt, null)
      assert.equal(page.body.nextAfter, page.body.messages.at(-1)!.sequence)
      assert.equal((await owner.messages.list()).messages.length, 0, 'the sender inbox is its own')

      const ack = await peer.client.request<AckView>('POST', `/v1/messages/${sent.body.id}/ack`)
      assert.equal(ack.status, 200)
      assert.equal(ack.body.id, sent.body.id)
      const again = await peer.messages.ack(sent.body.id)
      assert.equal(again.ackedAt, ack.body.ackedAt, 'a second ack answers the first ackedAt')
      const unacked = await peer.messages.list({ unacked: true })
      assert.ok(!unacked.messages.some((m) => m.id === sent.body.id))
      const all = await peer.messages.list()
      assert.equal(all.messages.find((m) => m.id === sent.body.id)?.ackedAt, ack.body.ackedAt)
    })

    test('a repeat answers the same id and byte-identical receipt; conflicting reuse is 409', async () => {
      const msg = notice(peer.principal, 'run-b2', 'rs_task2')
      const first = await owner.client.request<SentMessageView>('POST', '/v1/messages', msg)
      // The same body serialized with other key order and spacing is the same request.
      const reordered = `{ "idempotencyKey": ${JSON.stringify(msg.idempotencyKey)}, "body": {"taskVersion":1,"taskId":"rs_task2","runId":"run-b2","schema":"net-task-notice/v1"}, "recipient": ${JSON.stringify(peer.principal)} }`
      const second = await owner.client.request<SentMessageView>(
        'POST',
        '/v1/messages',
        reordered,
        {
          'content-type': 'application/json',
        },
      )
      assert.equal(first.status, 201)
      assert.equal(second.status, 201)
      assert.equal(JSON.stringify(second.body), JSON.stringify(first.body))
      assert.equal(second.body.receipt, first.body.receipt)

      const otherBody = await owner.client.request('POST', '/v1/messages', {
        ...msg,
        body: { ...msg.body, taskVersion: 2 },
      })
      assert.equal(otherBody.status, 409)
      assert.equal((otherBody.body as { code: string }).code, 'idempotency_conflict')
      const otherRecipient = await owner.client.request('POST', '/v1/messages', {
        ...msg,
        recipient: owner.principal,
      })
      assert.equal(otherRecipient.status, 409)
      assert.equal((otherRecipient.body as { code: string }).code, 'idempotency_conflict')

      // The key belongs to its sender: another sender using it sends its own message.
      const third = await agent(hub)
      const theirs = await third.messages.send(msg)
      assert.notEqual(theirs.id, first.body.id)
      const inbox = (await readAll(peer)).filter(
        (m) => m.body && (m.body as { runId?: string }).runId === 'run-b2',
      )
      assert.equal(inbox.length, 2)
    })

    test('the receipt verifies offline with the discovery hub key and fails when any byte changes', async () => {
      const msg = notice(peer.principal, 'run-c3', 'rs_task3')
      const sent = await owner.messages.send(msg)
      const expect = {
        body: msg.body,
        messageId: sent.id,
        sender: owner.principal,
        recipient: peer.principal,
      }
      const check = verifyMessageReceipt(sent.receipt, discovery.hubKey, expect)
      assert.ok(check.valid, JSON.stringify(check))
      assert.equal(check.payload.sequence, sent.sequence)
      assert.equal(check.payload.createdAt, sent.createdAt)
      assert.equal(check.kid, discovery.hubKey.kid)
      const [h] = sent.receipt.split('.')
      assert.deepEqual(JSON.parse(Buffer.from(h!, 'base64url').toString()), {
        alg: 'EdDSA',
        kid: discovery.hubKey.kid,
        typ: 'baton-message-receipt+jws',
      })

      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
      for (let i = 0; i < sent.receipt.length; i++) {
        const c = sent.receipt[i]!
        const swap = c === '.' ? 'A' : alphabet[(alphabet.indexOf(c) + 1) % 64]!
        const tampered = sent.receipt.slice(0, i) + swap + sent.receipt.slice(i + 1)
        assert.equal(verifyMessageReceipt(tampered, discovery.hubKey).valid, false, `byte ${i}`)
      }
      assert.equal(verifyMessageReceipt(`${sent.receipt}x`, discovery.hubKey).valid, false)
      assert.equal(
        verifyMessageReceipt(sent.receipt, discovery.hubKey, {
          body: { ...msg.body, taskVersion: 2 },
        }).valid,
        false,
      )
      assert.equal(
        verifyMessageReceipt(sent.receipt, discovery.hubKey, { sender: peer.principal }).valid,
        false,
      )
      const otherKey = createIdentity('x').publicKeyJwk
      assert.equal(verifyMessageReceipt(sent.receipt, otherKey).valid, false)
      assert.equal(
        verifyMessageReceipt(sent.receipt, { ...otherKey, kid: discovery.hubKey.kid }).valid,
        false,
      )

      // baton receipt verify: against discovery, offline with a saved JWK, and a tampered copy.
      const dir = mkdtempSync(path.join(tmpdir(), 'baton-receipt-'))
      try {
        const answerFile = path.join(dir, 'sent.json')
        const jwsFile = path.join(dir, 'receipt.jws')
        const keyFile = path.join(dir, 'hub-key.json')
        const bodyFile = path.join(dir, 'notice.json')
        const badFile = path.join(dir, 'bad.jws')
        writeFileSync(answerFile, JSON.stringify(sent))
        writeFileSync(jwsFile, `${sent.receipt}\n`)
        writeFileSync(keyFile, JSON.stringify(discovery.hubKey))
        writeFileSync(bodyFile, JSON.stringify(msg))
        writeFileSync(
          badFile,
          sent.receipt.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
        )
        const discoveryUrl = `${hub.url}/.well-known/agent-net`
        let cap = capture()
        assert.equal(
          await main(['receipt', 'verify', '--discovery', discoveryUrl, answerFile], cap.io),
          0,
          cap.err.join(),
        )
        cap = capture()
        assert.equal(
          await main(
            ['receipt', 'verify', '--hub-key', keyFile, '--body-file', bodyFile, jwsFile],
            cap.io,
          ),
          0,
          cap.err.join(),
        )
        cap = capture()
        assert.equal(await main(['receipt', 'verify', '--hub-key', keyFile, badFile], cap.io), 1)
        assert.match(cap.err.join(), /invalid/)
        cap = capture()
        const wrongBody = path.join(dir, 'wrong.json')
        writeFileSync(wrongBody, JSON.stringify({ ...msg.body, taskVersion: 9 }))
        assert.equal(
          await main(
            ['receipt', 'verify', '--hub-key', keyFile, '--body-file', wrongBody, answerFile],
            cap.io,
          ),
          1,
        )
        cap = capture()
        assert.equal(await main(['receipt', 'verify', jwsFile], cap.io), 64)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    test('inbox paging: after is exclusive, limit bounds a page, unacked filters; bad queries 400', async () => {
      const reader = await agent(hub)
      const sent: SentMessageView[] = []
      for (let i = 0; i < 7; i++) {
        sent.push(
          await owner.messages.send({
            recipient: reader.principal,
            body: { i },
            idempotencyKey: `page-${i}`,
          }),
        )
      }
      const seqs = sent.map((s) => s.sequence)
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!)
      const p1 = await reader.messages.list({ after: 0, limit: 3 })
      assert.deepEqual(
        p1.messages.map((m) => m.body),
        [{ i: 0 }, { i: 1 }, { i: 2 }],
      )
      assert.equal(p1.nextAfter, seqs[2])
      const p2 = await reader.messages.list({ after: p1.nextAfter, limit: 3 })
      assert.deepEqual(
        p2.messages.map((m) => m.id),
        sent.slice(3, 6).map((s) => s.id),
      )
      const p3 = await reader.messages.list({ after: p2.nextAfter, limit: 3 })
      assert.deepEqual(
        p3.messages.map((m) => m.id),
        [sent[6]!.id],
      )
      const p4 = await reader.messages.list({ after: p3.nextAfter })
      assert.deepEqual(p4, { messages: [], nextAfter: p3.nextAfter })
      assert.equal((await reader.messages.list({ after: seqs[0] })).messages[0]!.id, sent[1]!.id)
      assert.equal((await reader.messages.list()).messages.length, 7, 'default limit is 20')

      await reader.messages.ack(sent[0]!.id)
      await reader.messages.ack(sent[4]!.id)
      const unacked = await reader.messages.list({ unacked: true })
      assert.deepEqual(
        unacked.messages.map((m) => m.id),
        sent.filter((_, i) => i !== 0 && i !== 4).map((s) => s.id),
      )

      for (const q of [
        'limit=101',
        'limit=0',
        'limit=abc',
        'after=-1',
        'after=1.5',
        'after=x',
        'unacked=maybe',
        'wait=-3',
        'after=1&after=2',
      ]) {
        const res = await reader.client.request<{ code: string }>('GET', `/v1/messages?${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.code, 'invalid_request', q)
      }
      assert.equal((await reader.messages.list({ limit: 100 })).messages.length, 7)
    })

    test('a long poll answers as soon as a message for the caller commits', async () => {
      const waiter = await agent(hub)
      const { nextAfter } = await waiter.messages.list()
      const held = hub.ctx.waits.waiting
      const polling = waiter.messages.list({ after: nextAfter, wait: 20 })
      await hub.ctx.waits.untilWaiting(held + 1)
      // A message for someone else is no reason to answer.
      await owner.messages.send({
        recipient: peer.principal,
        body: 'x',
        idempotencyKey: 'lp-other',
      })
      const sent = await owner.messages.send({
        recipient: waiter.principal,
        body: { wake: true },
        idempotencyKey: 'lp-1',
      })
      const page = await polling
      assert.deepEqual(
        page.messages.map((m) => m.id),
        [sent.id],
      )
      assert.equal(page.nextAfter, sent.sequence)
      // A wait with a message already there answers at once.
      const now = await waiter.messages.list({ after: 0, wait: 20 })
      assert.equal(now.messages.length, 1)
    })

    test('ack by the sender or a third party is 404 and changes nothing; bad ids are 404', async () => {
      const sent = await owner.messages.send({
        recipient: peer.principal,
        body: { secret: 1 },
        idempotencyKey: 'ack-auth',
      })
      const third = await agent(hub)
      for (const who of [owner, third]) {
        const res = await who.client.request<{ code: string }>(
          'POST',
          `/v1/messages/${sent.id}/ack`,
        )
        assert.equal(res.status, 404)
        assert.equal(res.body.code, 'message_not_found')
      }
      for (const id of ['nope', 'msg_short', `${sent.id}x`, 'msg_AAAAAAAAAAAAAAAAAAAAAA']) {
        const res = await peer.client.request<{ code: string }>(
          'POST',
          `/v1/messages/${encodeURIComponent(id)}/ack`,
        )
        assert.equal(res.status, 404, id)
        assert.equal(res.body.code, 'message_not_found')
      }
      const mine = (await readAll(peer)).find((m) => m.id === sent.id)
      assert.equal(mine?.ackedAt, null)
    })

    test('unknown recipients are refused; bad bodies are 4xx, never 5xx', async () => {
      const stranger = createIdentity('x').principal
      for (const recipient of [stranger, 'did:key:zNotAKey', 'someone']) {
        const res = await owner.client.request<{ code: string }>('POST', '/v1/messages', {
          recipient,
          body: { a: 1 },
          idempotencyKey: `unknown-${recipient}`,
        })
        assert.equal(res.status, 404, recipient)
        assert.equal(res.body.code, 'recipient_unknown')
      }
      const base = { recipient: peer.principal, body: { a: 1 }, idempotencyKey: 'k' }
      const bad: [SignedBody, string][] = [
        [{}, 'invalid_request'],
        [[], 'invalid_request'],
        ['"text"', 'invalid_request'],
        [{ ...base, body: null }, 'invalid_request'],
        [{ ...base, recipient: 7 }, 'invalid_request'],
        [{ ...base, idempotencyKey: '' }, 'invalid_request'],
        [{ ...base, idempotencyKey: 'k'.repeat(201) }, 'invalid_request'],
        [{ ...base, idempotencyKey: undefined }, 'invalid_request'],
        [{ ...base, extra: 1 }, 'unknown_field'],
        [{ ...base, body: { big: 'x'.repeat(70 * 1024) } }, 'message_too_large'],
        [
          `{"recipient":"x","idempotencyKey":"k","body":${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
          'invalid_request',
        ],
      ]
      for (const [body, code] of bad) {
        const res = await owner.client.request<{ code: string }>('POST', '/v1/messages', body)
        assert.ok(
          res.status >= 400 && res.status < 500,
          `${JSON.stringify(body).slice(0, 80)}: ${res.status}`,
        )
        assert.equal(res.body.code, code, JSON.stringify(body).slice(0, 80))
      }
      const notJson = await owner.client.request<{ code: string }>(
        'POST',
        '/v1/messages',
        '{nope',
        {
          'content-type': 'application/json',
        },
      )
      assert.equal(notJson.body.code, 'invalid_json')
      const ok = await owner.client.request('POST', '/v1/messages', {
        ...base,
        idempotencyKey: 'k'.repeat(200),
        body: 'a plain string',
      })
      assert.equal(ok.status, 201)
      const unsigned = await call(hub, 'POST', '/v1/messages', { body: base })
      assert.equal(unsigned.status, 401)
    })

    test('one idempotency key sent many times at once stores one message', async () => {
      const target = await agent(hub)
      const msg = { recipient: target.principal, body: { once: true }, idempotencyKey: 'race-1' }
      const answers = await Promise.all(Array.from({ length: 25 }, () => owner.messages.send(msg)))
      const ids = new Set(answers.map((a) => a.id))
      const receipts = new Set(answers.map((a) => a.receipt))
      assert.equal(ids.size, 1)
      assert.equal(receipts.size, 1)
      assert.equal((await readAll(target)).length, 1)
    })

    test('MCP tools act as the bound principal with the same rules', async () => {
      const server = createMcpServer(
        {
          invoke: localInvoke(hub.ctx, {
            ip: '127.0.0.1',
            principal: {
              principal: owner.principal,
              state: 'approved',
              enrolledAt: 0,
              decidedAt: 0,
            },
          }),
          auths: new Set<Auth>(['none', 'signature']),
        },
        'test',
      )
      const [a, b] = InMemoryTransport.createLinkedPair()
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await Promise.all([server.connect(a), client.connect(b)])
      try {
        const names = (await client.listTools()).tools.map((t) => t.name)
        for (const name of [
          'send_message',
          'list_messages',
          'ack_message',
          'read_home_file',
          'write_home_file',
          'list_home_files',
          'delete_home_file',
        ]) {
          assert.ok(names.includes(name), name)
        }
        const tool = async (name: string, args: Record<string, unknown>) => {
          const res = await client.callTool({ name, arguments: args })
          return toolAnswer(res)
        }
        const sent = await tool('send_message', {
          recipient: peer.principal,
          body: { via: 'mcp' },
          idempotencyKey: 'mcp-1',
        })
        assert.equal(sent.isError, false, JSON.stringify(sent.body))
        const again = await tool('send_message', {
          recipient: peer.principal,
          body: { via: 'mcp' },
          idempotencyKey: 'mcp-1',
        })
        assert.equal(again.body.receipt, sent.body.receipt)
        const conflict = await tool('send_message', {
          recipient: peer.principal,
          body: { via: 'other' },
          idempotencyKey: 'mcp-1',
        })
        assert.equal(conflict.isError, true)
        assert.equal(conflict.body.code, 'idempotency_conflict')
        const ack = await tool('ack_message', { id: sent.body.id })
        assert.equal(ack.body.code, 'message_not_found', 'the sender cannot ack')

        // The same tools over HTTP, signed, as `baton mcp --identity` runs them for the peer.
        const sdkServer = createMcpServer(
          {
            invoke: remoteInvoke({
              plain: (method, path, body, headers, signal) =>
                requestJson(hub.url, method, path, body, { headers, signal }),
              signed: (method, path, body, headers, signal) =>
                peer.client.request(method, path, body as SignedBody, headers, { signal }),
            }),
            auths: new Set<Auth>(['none', 'signature']),
          },
          'test',
        )
        const [peerSide, hubSide] = InMemoryTransport.createLinkedPair()
        const peerClient = new Client({ name: 'baton-test-peer', version: '1.0.0' })
        await Promise.all([sdkServer.connect(hubSide), peerClient.connect(peerSide)])
        try {
          const peerAck = await peerClient.callTool({
            name: 'ack_message',
            arguments: { id: sent.body.id },
          })
          assert.equal(peerAck.isError === true, false, JSON.stringify(peerAck.structuredContent))
          const peerHome = await peerClient.callTool({
            name: 'write_home_file',
            arguments: { path: 'mcp/a.json', expectedRevision: 0, content: 'peer' },
          })
          assert.equal((peerHome.structuredContent as { revision: number }).revision, 1)
        } finally {
          await peerClient.close()
          await sdkServer.close()
        }
        assert.equal((await tool('list_messages', { after: 0 })).isError, false)

        const w = await tool('write_home_file', {
          path: 'mcp/a.json',
          expectedRevision: 0,
          content: '{}',
        })
        assert.equal(w.body.revision, 1)
        const r = await tool('read_home_file', { path: 'mcp/a.json' })
        assert.equal(r.body.content, '{}')
        const l = await tool('list_home_files', { prefix: 'mcp/' })
        assert.equal((l.body.files as unknown[]).length, 1)
        const c = await tool('write_home_file', {
          path: 'mcp/a.json',
          expectedRevision: 0,
          content: 'x',
        })
        assert.equal(c.body.code, 'revision_conflict')
        assert.equal(c.body.currentRevision, 1)
        const d = await tool('delete_home_file', { path: 'mcp/a.json', expectedRevision: 1 })
        assert.equal(d.body.deleted, true)
      } finally {
        await client.close()
        await server.close()
      }
    })

    test('the daily message quota refuses with 429; refused and replayed sends do not count', async () => {
      const small = await startTestHub(store, { ...OPEN, BATON_QUOTA_MESSAGES_PER_DAY: '2' })
      try {
        const a = await agent(small)
        const b = await agent(small)
        const unknown = await a.client.request('POST', '/v1/messages', {
          recipient: createIdentity('x').principal,
          body: 1,
          idempotencyKey: 'q0',
        })
        assert.equal(unknown.status, 404)
        const first = await a.messages.send({
          recipient: b.principal,
          body: 1,
          idempotencyKey: 'q1',
        })
        await a.messages.send({ recipient: b.principal, body: 2, idempotencyKey: 'q2' })
        const replay = await a.messages.send({
          recipient: b.principal,
          body: 1,
          idempotencyKey: 'q1',
        })
        assert.equal(replay.id, first.id)
        const over = await a.client.request<{ code: string }>('POST', '/v1/messages', {
          recipient: b.principal,
          body: 3,
          idempotencyKey: 'q3',
        })
        assert.equal(over.status, 429)
        assert.equal(over.body.code, 'rate_limited')
        assert.ok(Number(over.headers.get('retry-after')) > 0)
        assert.equal((await readAll(b)).length, 2)
      } finally {
        await small.close()
      }
    })

    test('polls that find nothing, repeated too fast, answer 429 with Retry-After', async () => {
      const slow = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '60000',
      })
      try {
        const a = await agent(slow)
        const b = await agent(slow)
        // A page with messages (a backlog) does not hold the next read back.
        await b.messages.send({ recipient: a.principal, body: 1, idempotencyKey: 'p1' })
        const full = await a.messages.list()
        assert.equal(full.messages.length, 1)
        assert.equal((await a.messages.list({ after: 0 })).messages.length, 1)
        const empty = await a.client.request<MessagePageView>(
          'GET',
          `/v1/messages?after=${full.nextAfter}`,
        )
        assert.equal(empty.status, 200)
        assert.equal(empty.body.messages.length, 0)
        const tooSoon = await a.client.request<{ code: string; retry_after: number }>(
          'GET',
          `/v1/messages?after=${full.nextAfter}`,
        )
        assert.equal(tooSoon.status, 429)
        assert.equal(tooSoon.body.code, 'rate_limited')
        const retryAfter = Number(tooSoon.headers.get('retry-after'))
        assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
        // The floor is per principal.
        assert.equal((await b.client.request('GET', '/v1/messages')).status, 200)
      } finally {
        await slow.close()
      }
    })

    test('a pending principal cannot send or receive; an approved one can', async () => {
      const gated = await startTestHub(store, {
        BATON_ADMIN_TOKEN: ADMIN_TOKEN,
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
      })
      try {
        const sender = await agent(gated)
        const pending = await agent(gated)
        const approve = await call(
          gated,
          'POST',
          `/admin/v1/principals/${encodeURIComponent(sender.principal)}/approve`,
          { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
        )
        assert.equal(approve.status, 200)
        const toPending = await sender.client.request<{ code: string }>('POST', '/v1/messages', {
          recipient: pending.principal,
          body: { hi: 1 },
          idempotencyKey: 'to-pending',
        })
        assert.equal(toPending.status, 404)
        assert.equal(toPending.body.code, 'recipient_unknown')
        const fromPending = await pending.client.request<{ code: string }>('POST', '/v1/messages', {
          recipient: sender.principal,
          body: { hi: 1 },
          idempotencyKey: 'from-pending',
        })
        assert.equal(fromPending.status, 403)
        assert.equal(fromPending.body.code, 'admission_pending')
        await call(
          gated,
          'POST',
          `/admin/v1/principals/${encodeURIComponent(pending.principal)}/approve`,
          {
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          },
        )
        const now = await sender.messages.send({
          recipient: pending.principal,
          body: { hi: 1 },
          idempotencyKey: 'to-pending',
        })
        assert.equal((await pending.messages.list()).messages[0]?.id, now.id)
      } finally {
        await gated.close()
      }
    })

    test('sequences never repeat or go backwards under concurrent sends on two instances', async () => {
      const { start, drop } = await restartableHub(store, OPEN)
      const one = await start()
      const two = await start()
      try {
        const senders = await Promise.all([one, two, one, two, one].map((h) => agent(h)))
        const recipients = await Promise.all([one, two, one].map((h) => agent(h)))
        // A reader follows one inbox with its cursor while the sends commit: it must see every
        // message exactly once, in order, although they commit on two instances.
        const watched = recipients[0]!
        let stop = false
        const seen: MessageView[] = []
        const follow = (async () => {
          let after = 0
          while (!stop) {
            const page = await watched.messages.list({ after, limit: 100 })
            seen.push(...page.messages)
            after = page.nextAfter
          }
          const rest = await watched.messages.list({ after, limit: 100 })
          seen.push(...rest.messages)
        })()
        const sends: Promise<SentMessageView>[] = []
        for (let i = 0; i < 100; i++) {
          const from = senders[i % senders.length]!
          const to = recipients[i % recipients.length]!
          sends.push(
            from.messages.send({ recipient: to.principal, body: { i }, idempotencyKey: `c-${i}` }),
          )
        }
        // One key sent through both instances at once still names one message.
        const racer = senders[0]!
        const raced = {
          recipient: recipients[1]!.principal,
          body: 'raced',
          idempotencyKey: 'race-2',
        }
        const viaTwo = new MessagesClient(
          await SignedClient.connect(`${two.url}/.well-known/agent-net`, racer.client.identity),
        )
        const racing = Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? viaTwo : racer.messages).send(raced)),
        )
        const sent = await Promise.all(sends)
        const racedAnswers = await racing
        stop = true
        await follow
        const seqs = sent.map((s) => s.sequence)
        assert.equal(new Set(seqs).size, 100, 'no sequence repeats')
        const union: MessageView[] = []
        for (const r of recipients) {
          const inbox = await readAll(r, 7)
          for (let i = 1; i < inbox.length; i++) {
            assert.ok(inbox[i]!.sequence > inbox[i - 1]!.sequence, 'an inbox is strictly ordered')
          }
          union.push(...inbox)
        }
        assert.equal(new Set(racedAnswers.map((a) => a.receipt)).size, 1)
        const racedId = racedAnswers[0]!.id
        assert.equal(union.filter((m) => m.id === racedId).length, 1)
        const unionSent = union.filter((m) => m.id !== racedId)
        assert.equal(unionSent.length, 100)
        assert.deepEqual(
          unionSent.map((m) => m.sequence).sort((a, b) => a - b),
          [...seqs].sort((a, b) => a - b),
        )
        const expected = sent.filter((s) => s.recipient === watched.principal).map((s) => s.id)
        assert.deepEqual(
          seen.map((m) => m.id).sort(),
          [...expected].sort(),
          'the following reader missed or repeated none',
        )
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.sequence > seen[i - 1]!.sequence)
      } finally {
        await one.stop()
        await two.stop()
        await drop()
      }
    })

    test('a waiting poll is answered when the hub shuts down', { timeout: 20_000 }, async () => {
      const { start, drop } = await restartableHub(store, OPEN)
      const running = await start()
      try {
        const a = await agent(running)
        const polling = a.client.request<MessagePageView>('GET', '/v1/messages?wait=25')
        await running.ctx.waits.untilWaiting(1)
        await running.stop()
        const answer = await polling
        assert.equal(answer.status, 200)
        assert.deepEqual(answer.body, { messages: [], nextAfter: 0 })
      } finally {
        await running.stop()
        await drop()
      }
    })

    test('messages, acks and receipts survive a restart; a replay after it answers the same bytes', async () => {
      const { start, drop } = await restartableHub(store, OPEN)
      let running = await start()
      try {
        const a = await agent(running)
        const b = await agent(running)
        const msg = notice(b.principal, 'run-r1', 'rs_restart')
        const sent = await a.messages.send(msg)
        const acked = await b.messages.ack(sent.id)
        await running.stop()
        running = await start()
        const url = `${running.url}/.well-known/agent-net`
        const a2 = new MessagesClient(await SignedClient.connect(url, a.client.identity))
        const b2 = new MessagesClient(await SignedClient.connect(url, b.client.identity))
        const replay = await a2.send(msg)
        assert.equal(JSON.stringify(replay), JSON.stringify(sent))
        const inbox = await b2.list()
        assert.equal(inbox.messages[0]?.id, sent.id)
        assert.equal(inbox.messages[0]?.ackedAt, acked.ackedAt)
        const doc = await fetchDiscovery(url)
        assert.ok(verifyMessageReceipt(replay.receipt, doc.hubKey, { body: msg.body }).valid)
        const next = await a2.send({ ...msg, idempotencyKey: 'after-restart' })
        assert.ok(next.sequence > sent.sequence)
      } finally {
        await running.stop()
        await drop()
      }
    })
  })
}

for (const store of testStores) {
  describe(`sends that arrive together are written as one (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { ...OPEN, BATON_QUOTA_MESSAGES_PER_DAY: '4' })
    })
    after(() => hub.close())

    test('each send of a batch is answered as it would be alone', async () => {
      const a = await agent(hub)
      const b = await agent(hub)
      const unknown = createIdentity('nobody').principal
      const svc = hub.ctx.messages
      const body = (n: number) => ({ n })
      const counts = countStatements(hub.ctx.database)
      const before = { ...counts }
      // Started together, so the batcher takes them into one transaction.
      const results = await Promise.allSettled([
        svc.send(a.principal, { recipient: b.principal, body: body(1), idempotencyKey: 'batch-1' }),
        svc.send(a.principal, { recipient: b.principal, body: body(1), idempotencyKey: 'batch-1' }),
        svc.send(a.principal, { recipient: b.principal, body: body(9), idempotencyKey: 'batch-1' }),
        svc.send(a.principal, { recipient: unknown, body: body(2), idempotencyKey: 'batch-2' }),
        svc.send(a.principal, { recipient: b.principal, body: body(3), idempotencyKey: 'batch-3' }),
        svc.send(a.principal, { recipient: b.principal, body: body(4), idempotencyKey: 'batch-4' }),
        svc.send(a.principal, { recipient: b.principal, body: body(5), idempotencyKey: 'batch-5' }),
        svc.send(a.principal, { recipient: b.principal, body: body(6), idempotencyKey: 'batch-6' }),
      ])
      // Set-based: a handful of statements for the eight sends, not five or six for each.
      assert.ok(
        counts.statements - before.statements <= 12,
        `${counts.statements - before.statements} statements`,
      )
      const outcome = results.map((r) =>
        r.status === 'fulfilled' ? r.value.id : (r.reason as { code: string }).code,
      )
      // The same key and send answer the same message; another body under it is a conflict.
      assert.equal(outcome[1], outcome[0])
      assert.equal(outcome[2], 'idempotency_conflict')
      assert.equal(outcome[3], 'recipient_unknown')
      // Four messages a day: the first four fresh sends pass, the fifth is refused.
      assert.deepEqual(
        outcome.slice(4).map((o) => o.startsWith('msg_')),
        [true, true, true, false],
      )
      assert.equal(outcome[7], 'rate_limited')
      const sent = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
      const sequences = [...new Set(sent.map((m) => m.sequence))].sort((x, y) => x - y)
      assert.equal(sequences.length, 4)
      assert.deepEqual(
        sequences,
        sequences.map((_, i) => sequences[0]! + i),
        'one step of the sequence, no gap',
      )
      // Only what was sent counts: the refused send left the day's count at the limit.
      assert.equal((await a.client.me()).quotas.messagesPerDay.used, 4)
      const inbox = await readAll(b)
      assert.deepEqual(inbox.map((m) => (m.body as { n: number }).n).sort(), [1, 3, 4, 5])
      for (const m of sent) {
        const check = a.messages.verifyReceipt(m.receipt, {
          messageId: m.id,
          sender: a.principal,
          recipient: b.principal,
        })
        assert.equal(check.valid, true)
      }
    })
  })
}
