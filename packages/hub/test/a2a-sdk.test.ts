import assert from 'node:assert/strict'
import { createPublicKey, verify } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import {
  type ListTasksRequest,
  SendMessageRequest,
  type StreamResponse,
  type Task,
  TaskState,
} from '@a2a-js/sdk'
import {
  AgentCardResolver,
  type Client,
  ClientFactory,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client'
import {
  a2aFetch,
  addressTo,
  createIdentity,
  matchContentDigest,
  parseDictionary,
  readGenerationMismatch,
  readRelay,
  relayUpdate,
  type SfInnerList,
  type SignedClient,
  saveIdentity,
  signatureBase,
  signedFetch,
  waitPastGeneration,
} from '@baton/client'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { call, repoRoot, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const ENV = { BATON_ADMISSION: 'open', BATON_NOTIFY_ALLOW_LOOPBACK: 'true' }

/** A2A 1.0 §3.6.1: a client names its version in every request; raw calls here do too. */
const V1 = { 'a2a-version': '1.0' }

/** A `fetch` that signs as `as` and records each answer's headers, as a generic client sees them. */
function recordingFetch(as: SignedClient, sign = true) {
  const answers: Headers[] = []
  const inner = sign ? a2aFetch(as.identity) : fetch
  const fetchImpl = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await inner(input as string, init)
    answers.push(res.headers)
    return res
  }
  return { fetchImpl: fetchImpl as typeof fetch, answers }
}

/** The ts block of docs/a2a.md that builds an A2A client with the official SDK. */
function docSnippet(): string {
  const doc = readFileSync(path.join(repoRoot, 'docs/a2a.md'), 'utf8')
  const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const snippet = blocks.filter((b) => b.includes('@a2a-js/sdk'))
  assert.equal(snippet.length, 1, 'one SDK snippet in docs/a2a.md')
  return snippet[0]!
}

/** Replaces `from` in `text`, which must hold it exactly once, so the doc cannot drift unseen. */
function replaceOnce(text: string, from: string, to: string): string {
  assert.equal(text.split(from).length, 2, `the snippet holds ${from} once`)
  return text.replace(from, () => to)
}

/** The official SDK client for `agent`, speaking to the hub as `as` (its fetch signs). */
async function sdkClient(hub: { url: string }, as: SignedClient, agent?: string): Promise<Client> {
  const card = await AgentCardResolver.default.resolve(hub.url)
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: a2aFetch(as.identity) })],
    clientConfig: { polling: true },
  })
  return factory.createFromAgentCard(addressTo(card, agent ?? ''))
}

/** A SendMessage request from its ProtoJSON, as the SDK types it. */
const request = (json: Record<string, unknown>) => SendMessageRequest.fromJSON(json)

const userText = (messageId: string, text: string, taskId?: string) => ({
  messageId,
  role: 'ROLE_USER',
  parts: [{ text }],
  ...(taskId ? { taskId } : {}),
})

/** An agent's update of its own task: a message, and a state under Baton's relay extension. */
const agentUpdate = (messageId: string, taskId: string, state: string, extra = {}) =>
  request({
    message: { messageId, role: 'ROLE_AGENT', parts: [{ text: state }], taskId },
    metadata: { [A2A_RELAY_EXTENSION_URI]: { state, ...extra } },
  })

function generationOf(meta: { [k: string]: unknown } | undefined): number {
  const relay = meta?.[A2A_RELAY_EXTENSION_URI] as { generation: number } | undefined
  assert.ok(relay, 'the relay metadata')
  return relay.generation
}

function taskOf(result: Task | { messageId: string }): Task {
  assert.ok('id' in result && 'status' in result, 'a task')
  return result as Task
}

/** The generation an event of a stream carries, wherever its type puts it. */
function eventGeneration(e: StreamResponse): number {
  const p = e.payload!
  if (p.$case === 'task') return generationOf(p.value.metadata)
  if (p.$case === 'statusUpdate') return generationOf(p.value.metadata)
  if (p.$case === 'artifactUpdate') return generationOf(p.value.metadata)
  throw new Error(`no generation on ${p.$case}`)
}

/** Runs `fn` and answers what the SDK threw: the JSON-RPC code and Baton's body in `data`. */
async function rpcRefusal(fn: () => Promise<unknown>) {
  try {
    await fn()
  } catch (error) {
    const e = error as { envelopeCode?: number; data?: Record<string, unknown> }
    return { rpc: e.envelopeCode, data: e.data ?? {} }
  }
  assert.fail('expected a refusal')
}

interface Received {
  headers: IncomingHttpHeaders
  raw: string
  url: string
}

/** A webhook on loopback that records what it is posted and answers 204. */
async function webhook() {
  const got: Received[] = []
  const waiting: ((r: Received) => void)[] = []
  const server = createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', (c) => {
      raw += c
    })
    req.on('end', () => {
      const r = { headers: req.headers, raw, url: req.url ?? '' }
      got.push(r)
      res.writeHead(204).end()
      for (const w of waiting.splice(0)) w(r)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a-hook`
  return {
    url,
    got,
    /** Resolves once `n` requests have arrived. */
    async count(n: number) {
      while (got.length < n) await new Promise<Received>((r) => waiting.push(r))
      return got.slice(0, n)
    },
    /** Resolves once what has arrived satisfies `done`. */
    async until(done: (got: Received[]) => boolean) {
      while (!done(got)) await new Promise<Received>((r) => waiting.push(r))
      return [...got]
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

/** Verifies a push notification as a receiver would: with the hub key discovery publishes. */
async function verifyPush(hub: { url: string }, r: Received, targetUri: string): Promise<boolean> {
  const discovery = (await (await fetch(`${hub.url}/.well-known/agent-net`)).json()) as {
    hubKey: { kid: string; kty: string; crv: string; x: string }
  }
  const { kid, ...jwk } = discovery.hubKey
  const input = parseDictionary(String(r.headers['signature-input']))
  const signature = parseDictionary(String(r.headers.signature))
  const [label, member] = input[0]!
  const list = member as SfInnerList
  assert.equal(Object.fromEntries(list.params).keyid, kid)
  assert.equal(matchContentDigest(String(r.headers['content-digest']), Buffer.from(r.raw)), true)
  const base = signatureBase({ method: 'POST', targetUri, headers: r.headers }, list)
  const sig = signature.find(([l]) => l === label)![1] as { value: Uint8Array }
  return verify(null, Buffer.from(base), createPublicKey({ key: jwk, format: 'jwk' }), sig.value)
}

for (const store of testStores) {
  describe(`A2A through the official SDK client (${store.name})`, () => {
    let hub: TestHub
    let owner: SignedClient
    let agent: SignedClient
    let outsider: SignedClient
    let sender: Client
    let worker: Client
    let stranger: Client

    before(async () => {
      hub = await startTestHub(store, ENV)
      owner = await signedAgent(hub)
      agent = await signedAgent(hub)
      outsider = await signedAgent(hub)
      sender = await sdkClient(hub, owner, agent.principal)
      worker = await sdkClient(hub, agent)
      stranger = await sdkClient(hub, outsider)
    })
    after(() => hub.close())

    const start = async (messageId: string) =>
      taskOf(await sender.sendMessage(request({ message: userText(messageId, 'plan it') })))

    test('the agent card names the signed endpoint and the extensions', async () => {
      const card = (await call(hub, 'GET', '/.well-known/agent-card.json')).body as {
        supportedInterfaces: { url: string; protocolBinding: string }[]
        capabilities: { extensions: { uri: string }[] }
        securitySchemes: Record<string, unknown>
      }
      assert.deepEqual(
        card.supportedInterfaces.map((i) => [new URL(i.url).pathname, i.protocolBinding]),
        [['/v1/a2a', 'JSONRPC']],
      )
      assert.deepEqual(
        card.capabilities.extensions.map((e) => e.uri),
        [A2A_RELAY_EXTENSION_URI, 'https://quantumlearningmachines.com/a2a/ext/agent-handoff/v1'],
      )
      assert.ok(card.securitySchemes.httpSignature)
      // Unsigned JSON-RPC is refused as any /v1 request is.
      const unsigned = await call(hub, 'POST', '/v1/a2a', {
        body: { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} },
      })
      assert.equal(unsigned.status, 401)
      const refusal = unsigned.body.error as { code: number; data: { code: string } }
      assert.equal(refusal.code, -32000)
      assert.equal(refusal.data.code, 'signature_missing')
      // RFC 9110 §11.6.1: the 401 says how to authenticate; RFC 9421 §5.1: what to sign.
      assert.equal(unsigned.headers.get('www-authenticate'), 'Signature realm="baton"')
      const [label, asked] = parseDictionary(String(unsigned.headers.get('accept-signature')))[0]!
      assert.equal(label, 'sig1')
      const list = asked as SfInnerList
      assert.deepEqual(
        list.items.map((i) => i.value),
        ['@method', '@target-uri', 'content-digest', 'content-type'],
      )
      assert.deepEqual(Object.fromEntries(list.params), { created: true, alg: 'ed25519' })
    })

    test('send, get, list and cancel', async () => {
      const task = await start('sdk-send')
      assert.equal(task.status?.state, TaskState.TASK_STATE_SUBMITTED)
      assert.equal(generationOf(task.metadata), 1)
      const seen = await worker.getTask({ tenant: '', id: task.id, historyLength: undefined })
      assert.equal(seen.id, task.id)
      assert.equal(seen.history[0]?.messageId, 'sdk-send')
      const listed = await sender.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
      })
      assert.ok(listed.tasks.some((t) => t.id === task.id))
      const missing = await rpcRefusal(() =>
        stranger.getTask({ tenant: '', id: task.id, historyLength: undefined }),
      )
      assert.equal(missing.rpc, -32001)
      assert.equal(missing.data.code, 'a2a_task_not_found')
      const canceled = await sender.cancelTask({ tenant: '', id: task.id, metadata: undefined })
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED)
      const again = await rpcRefusal(() =>
        sender.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
      )
      assert.equal(again.rpc, -32002)
      assert.equal(again.data.code, 'a2a_task_not_cancelable')
    })

    test('a stream follows the task to its end; a dropped stream resumes with no event lost', async () => {
      const stream = sender.sendMessageStream(request({ message: userText('sdk-stream', 'go') }))
      const firstEvents: StreamResponse[] = []
      for await (const e of stream) {
        firstEvents.push(e)
        break
      }
      const first = firstEvents[0]!.payload!
      assert.equal(first.$case, 'task')
      const taskId = (first.value as Task).id
      const lastSeen = eventGeneration(firstEvents[0]!)
      // While no stream is open the agent works and finishes.
      await worker.sendMessage(agentUpdate('w-1', taskId, 'TASK_STATE_WORKING'))
      await worker.sendMessage(
        agentUpdate('w-2', taskId, 'TASK_STATE_COMPLETED', {
          artifacts: [{ artifact: { artifactId: 'out', parts: [{ text: 'result' }] } }],
        }),
      )
      const resumed: StreamResponse[] = []
      for await (const e of sender.resubscribeTask(
        { tenant: '', id: taskId },
        { serviceParameters: { 'Last-Event-ID': String(lastSeen) } },
      )) {
        resumed.push(e)
      }
      assert.deepEqual(
        resumed.map((e) => [e.payload!.$case, eventGeneration(e)]),
        [
          ['statusUpdate', 2],
          ['artifactUpdate', 3],
          ['statusUpdate', 4],
        ],
      )
      const last = resumed.at(-1)!.payload!
      assert.equal(last.$case, 'statusUpdate')
      if (last.$case === 'statusUpdate') {
        assert.equal(last.value.status?.state, TaskState.TASK_STATE_COMPLETED)
      }
    })

    test('a live stream sees each change as it commits', async () => {
      const task = await start('sdk-live')
      const events: StreamResponse[] = []
      const reading = (async () => {
        for await (const e of sender.resubscribeTask({ tenant: '', id: task.id })) {
          events.push(e)
          if (e.payload?.$case === 'task') {
            await worker.sendMessage(agentUpdate('live-1', task.id, 'TASK_STATE_WORKING'))
            await sender.sendMessage(request({ message: userText('live-2', 'detail', task.id) }))
            await worker.sendMessage(agentUpdate('live-3', task.id, 'TASK_STATE_INPUT_REQUIRED'))
          }
        }
      })()
      await reading
      assert.deepEqual(
        events.map((e) => eventGeneration(e)),
        [1, 2, 3, 4],
      )
      // Within a task, the sender's message reaches the stream as a status update that keeps the
      // state and carries the message.
      const relayed = events[2]!.payload!
      assert.equal(relayed.$case, 'statusUpdate')
      if (relayed.$case === 'statusUpdate') {
        assert.equal(relayed.value.status?.state, TaskState.TASK_STATE_WORKING)
        assert.equal(relayed.value.status?.message?.messageId, 'live-2')
      }
    })

    test('a push notification arrives signed by the hub key', async () => {
      const hook = await webhook()
      try {
        const task = await start('sdk-push')
        const config = await sender.createTaskPushNotificationConfig({
          tenant: '',
          id: 'hook-1',
          taskId: task.id,
          url: hook.url,
          token: '',
          authentication: undefined,
        })
        assert.equal(config.id, 'hook-1')
        const listed = await sender.listTaskPushNotificationConfig({
          tenant: '',
          taskId: task.id,
          pageSize: 0,
          pageToken: '',
        })
        assert.deepEqual(
          listed.configs.map((c) => c.id),
          ['hook-1'],
        )
        await worker.sendMessage(agentUpdate('push-1', task.id, 'TASK_STATE_COMPLETED'))
        const [got] = await hook.count(1)
        assert.equal(await verifyPush(hub, got!, hook.url), true)
        const body = JSON.parse(got!.raw)
        assert.equal(body.statusUpdate.taskId, task.id)
        assert.equal(body.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
        assert.equal(body.statusUpdate.generation, 2)
        // A push URL is checked like a notify_url: no special-purpose address.
        const refused = await rpcRefusal(() =>
          sender.createTaskPushNotificationConfig({
            tenant: '',
            id: 'hook-2',
            taskId: task.id,
            url: 'http://169.254.169.254/latest/meta-data',
            token: '',
            authentication: undefined,
          }),
        )
        assert.equal(refused.data.code, 'invalid_notify_url')
        await sender.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' })
      } finally {
        await hook.close()
      }
    })

    test('a config set in SendMessage is pushed the creation; every delivery carries its token', async () => {
      const hook = await webhook()
      try {
        const task = taskOf(
          await sender.sendMessage(
            request({
              message: userText('sdk-push-send', 'plan it'),
              configuration: {
                returnImmediately: true,
                taskPushNotificationConfig: { url: hook.url, token: 'send-token-1' },
              },
            }),
          ),
        )
        // a config set later with its own token: each delivery carries the token of its config
        await sender.createTaskPushNotificationConfig({
          tenant: '',
          id: 'hook-later',
          taskId: task.id,
          url: hook.url,
          token: 'later-token-2',
          authentication: undefined,
        })
        await worker.sendMessage(agentUpdate('push-send-1', task.id, 'TASK_STATE_COMPLETED'))
        const generation = (r: Received) => JSON.parse(r.raw).statusUpdate.generation as number
        // deliveries to one URL go in order, so the creation comes before both completions
        const got = await hook.until((all) => all.filter((r) => generation(r) === 2).length === 2)
        assert.deepEqual(got.map(generation), [1, 2, 2])
        const [created, ...completed] = got
        assert.equal(created!.headers['x-a2a-notification-token'], 'send-token-1')
        const first = JSON.parse(created!.raw)
        assert.equal(first.statusUpdate.taskId, task.id)
        assert.equal(first.statusUpdate.status.state, 'TASK_STATE_SUBMITTED')
        const tokens = completed.map((r) => r.headers['x-a2a-notification-token'])
        assert.deepEqual(tokens.sort(), ['later-token-2', 'send-token-1'])
        for (const r of got) assert.equal(await verifyPush(hub, r, hook.url), true)
      } finally {
        await hook.close()
      }
    })

    test('push authentication the hub cannot send is refused, and nothing is stored', async () => {
      const task = await start('sdk-push-auth')
      const refused = await rpcRefusal(() =>
        sender.createTaskPushNotificationConfig({
          tenant: '',
          id: 'hook-auth',
          taskId: task.id,
          url: 'https://93.184.215.14/a2a',
          token: '',
          authentication: { scheme: 'Bearer', credentials: 'their-secret' },
        }),
      )
      assert.equal(refused.rpc, -32602)
      assert.equal(refused.data.code, 'a2a_push_auth_unsupported')
      assert.equal(typeof refused.data.fix, 'string')
      const listed = await sender.listTaskPushNotificationConfig({
        tenant: '',
        taskId: task.id,
        pageSize: 0,
        pageToken: '',
      })
      assert.deepEqual(listed.configs, [])
      // The token rides as a header value: one no header can carry is refused, not stored.
      const badToken = await rpcRefusal(() =>
        sender.createTaskPushNotificationConfig({
          tenant: '',
          id: 'hook-bad-token',
          taskId: task.id,
          url: 'https://93.184.215.14/a2a',
          token: 'line\r\nx-injected: 1',
          authentication: undefined,
        }),
      )
      assert.equal(badToken.rpc, -32602)
      assert.equal(badToken.data.code, 'invalid_request')
      assert.equal(typeof badToken.data.fix, 'string')
      const stillNone = await sender.listTaskPushNotificationConfig({
        tenant: '',
        taskId: task.id,
        pageSize: 0,
        pageToken: '',
      })
      assert.deepEqual(stillNone.configs, [])
      const before = (await hub.ctx.a2a.list(owner.principal, {})).totalSize
      const inSend = await rpcRefusal(() =>
        sender.sendMessage(
          request({
            message: userText('sdk-push-auth-send', 'plan it'),
            configuration: {
              returnImmediately: true,
              taskPushNotificationConfig: {
                url: 'https://93.184.215.14/a2a',
                authentication: { scheme: 'Basic', credentials: 'dTpw' },
              },
            },
          }),
        ),
      )
      assert.equal(inSend.data.code, 'a2a_push_auth_unsupported')
      assert.equal((await hub.ctx.a2a.list(owner.principal, {})).totalSize, before)
    })

    test('a stale ifGenerationMatch is refused with the current generation', async () => {
      const task = await start('sdk-cas')
      await worker.sendMessage(
        agentUpdate('cas-1', task.id, 'TASK_STATE_WORKING', { ifGenerationMatch: 1 }),
      )
      const stale = await rpcRefusal(() =>
        worker.sendMessage(
          agentUpdate('cas-2', task.id, 'TASK_STATE_COMPLETED', { ifGenerationMatch: 1 }),
        ),
      )
      assert.equal(stale.rpc, -32010)
      assert.equal(stale.data.code, 'a2a_generation_mismatch')
      assert.equal(stale.data.status, 409)
      assert.equal(stale.data.currentGeneration, 2)
    })

    test('a repeated messageId is answered once, with the first result', async () => {
      const first = await start('sdk-once')
      const again = await start('sdk-once')
      assert.equal(again.id, first.id)
      assert.deepEqual(again, first)
      const listed = await sender.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
        pageSize: 100,
      })
      assert.equal(listed.tasks.filter((t) => t.history[0]?.messageId === 'sdk-once').length, 1)
    })

    test('eight racing clients on one generation: one winner', async () => {
      const task = await start('sdk-race')
      const racers = await Promise.all(Array.from({ length: 8 }, () => sdkClient(hub, agent)))
      const outcomes = await Promise.allSettled(
        racers.map((c, i) =>
          c.sendMessage(
            agentUpdate(`race-${i}`, task.id, 'TASK_STATE_WORKING', { ifGenerationMatch: 1 }),
          ),
        ),
      )
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1)
      for (const o of outcomes) {
        if (o.status === 'rejected') assert.equal(o.reason.envelopeCode, -32010)
      }
      const now = await sender.getTask({ tenant: '', id: task.id, historyLength: undefined })
      assert.equal(generationOf(now.metadata), 2)
    })

    test('GetTask with currentGeneration (dev-1.1) long-polls until the task moves', async () => {
      const task = await start('sdk-poll')
      const rpc = signedFetch(owner.identity)
      const waiting = rpc(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V1 },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'GetTask',
          params: { id: task.id, currentGeneration: '1' },
        }),
      })
      await worker.sendMessage(agentUpdate('poll-1', task.id, 'TASK_STATE_WORKING'))
      const answer = (await (await waiting).json()) as {
        id: number
        result: { generation: number; status: { state: string } }
      }
      assert.equal(answer.id, 7)
      assert.equal(answer.result.generation, 2)
      assert.equal(answer.result.status.state, 'TASK_STATE_WORKING')
      // The dev-1.1 field of SendMessageConfiguration is read where that draft puts it.
      const stale = await rpc(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V1 },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 8,
          method: 'SendMessage',
          params: {
            message: { ...userText('poll-2', 'more', task.id) },
            configuration: { ifGenerationMatch: '1', returnImmediately: true },
          },
        }),
      })
      assert.equal(stale.status, 409)
      const body = (await stale.json()) as {
        error: { code: number; data: Record<string, unknown> }
      }
      assert.equal(body.error.code, -32010)
      assert.equal(body.error.data.currentGeneration, 2)
    })

    test('an unknown method is a JSON-RPC method-not-found', async () => {
      const answer = await signedFetch(owner.identity)(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V1 },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tasks/nothing', params: {} }),
      })
      const body = (await answer.json()) as {
        id: number
        error: { code: number; data: { code: string } }
      }
      assert.equal(body.id, 9)
      assert.equal(body.error.code, -32601)
      assert.equal(body.error.data.code, 'a2a_method_not_found')
      // A body that is JSON but no request object is an invalid request, and changes nothing.
      const batch = await signedFetch(owner.identity)(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V1 },
        body: JSON.stringify([{ jsonrpc: '2.0', id: 10, method: 'ListTasks', params: {} }]),
      })
      assert.equal(batch.status, 400)
      const refused = (await batch.json()) as { error: { code: number; data: { code: string } } }
      assert.equal(refused.error.code, -32600)
      assert.equal(refused.error.data.code, 'invalid_request')
      const notJson = await signedFetch(owner.identity)(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V1 },
        body: '{"jsonrpc": "2.0", "id": 11,',
      })
      assert.equal(notJson.status, 400)
      const parse = (await notJson.json()) as { error: { code: number; data: { code: string } } }
      assert.equal(parse.error.code, -32700)
      assert.equal(parse.error.data.code, 'invalid_json')
    })

    test('every 401 carries a challenge: Signature with Accept-Signature, or Bearer', async () => {
      // The official SDK, given a fetch that does not sign: its refusal carries the challenge.
      const plain = recordingFetch(owner, false)
      const card = await AgentCardResolver.default.resolve(hub.url)
      const unsigned = await new ClientFactory({
        transports: [new JsonRpcTransportFactory({ fetchImpl: plain.fetchImpl })],
      }).createFromAgentCard(card)
      const refused = await rpcRefusal(() => unsigned.getTask({ tenant: '', id: 'task_x' }))
      assert.equal(refused.data.code, 'signature_missing')
      assert.equal(plain.answers.at(-1)!.get('www-authenticate'), 'Signature realm="baton"')
      assert.match(
        plain.answers.at(-1)!.get('accept-signature')!,
        /^sig1=\("@method" "@target-uri"/,
      )
      // A signature that does not verify names its code; a body-less route asks for no digest.
      const tampered = await fetch(`${hub.url}/v1/me`, {
        headers: {
          'signature-input': 'sig1=("@method");created=1;keyid="x";alg="ed25519"',
          signature: 'sig1=:AAAA:',
        },
      })
      assert.equal(tampered.status, 401)
      const code = ((await tampered.json()) as { code: string }).code
      assert.equal(
        tampered.headers.get('www-authenticate'),
        `Signature realm="baton", error="${code}"`,
      )
      const me = await call(hub, 'GET', '/v1/me')
      assert.equal(me.status, 401)
      assert.equal(
        me.headers.get('accept-signature'),
        'sig1=("@method" "@target-uri");created;alg="ed25519"',
      )
      // A bearer-token route challenges for its bearer token (RFC 6750 §3).
      const handoff = await call(hub, 'GET', '/services/v1/handoff/h_nothing')
      assert.equal(handoff.status, 401)
      assert.equal(handoff.headers.get('www-authenticate'), 'Bearer realm="baton"')
    })

    test('A2A-Version: a version the hub does not serve, or none (0.3), is VersionNotSupportedError', async () => {
      const before = (await hub.ctx.a2a.list(owner.principal, {})).totalSize
      // The official SDK sends 1.0; rewritten to another version, it reads the hub's refusal as
      // its own VersionNotSupportedError.
      const rewrite = (version: string | undefined) => {
        const inner = a2aFetch(owner.identity)
        return ((input: string, init: RequestInit) => {
          const headers = { ...(init.headers as Record<string, string>) }
          delete headers['A2A-Version']
          if (version !== undefined) headers['A2A-Version'] = version
          return inner(input, { ...init, headers })
        }) as typeof fetch
      }
      const card = addressTo(await AgentCardResolver.default.resolve(hub.url), agent.principal)
      for (const version of ['0.5', '0.3', '1.1', '2.0', '', undefined]) {
        const client = await new ClientFactory({
          transports: [new JsonRpcTransportFactory({ fetchImpl: rewrite(version) })],
        }).createFromAgentCard(card)
        let thrown: unknown
        await client
          .sendMessage(request({ message: userText(`sdk-version-${version}`, 'plan it') }))
          .catch((e: unknown) => {
            thrown = e
          })
        const e = thrown as { name: string; envelopeCode: number; data: Record<string, unknown> }
        assert.equal(e?.name, 'VersionNotSupportedError', `version ${version}`)
        assert.equal(e.envelopeCode, -32009)
        assert.equal(e.data.code, 'a2a_version_not_supported')
        assert.equal(e.data.status, 400)
        assert.equal(e.data.requested, version || '0.3')
        assert.deepEqual(e.data.supportedVersions, ['1.0'])
      }
      assert.equal((await hub.ctx.a2a.list(owner.principal, {})).totalSize, before, 'nothing ran')
      // Major.Minor is matched and a patch number is not considered; a query parameter serves.
      const rpc = signedFetch(owner.identity)
      const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} })
      const post = (url: string, headers: Record<string, string>) =>
        rpc(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: list,
        })
      assert.equal((await post(`${hub.url}/v1/a2a`, { 'a2a-version': '1.0.2' })).status, 200)
      assert.equal((await post(`${hub.url}/v1/a2a?A2A-Version=1.0`, {})).status, 200)
      const none = await post(`${hub.url}/v1/a2a`, {})
      assert.equal(none.status, 400)
      const body = (await none.json()) as { id: number; error: { code: number } }
      assert.equal(body.id, 1)
      assert.equal(body.error.code, -32009)
    })

    test('a plain ClientFactory client built from the card addressed to an agent creates its task', async () => {
      const factory = new ClientFactory({
        transports: [new JsonRpcTransportFactory({ fetchImpl: a2aFetch(owner.identity) })],
      })
      const addressed = await factory.createFromUrl(
        hub.url,
        `.well-known/agent-card.json?tenant=${agent.principal}`,
      )
      const task = taskOf(
        await addressed.sendMessage(
          request({
            message: userText('sdk-card-tenant', 'plan it'),
            configuration: { returnImmediately: true },
          }),
        ),
      )
      assert.equal(readRelay(task.metadata)?.agent, agent.principal)
      assert.equal(readRelay(task.metadata)?.owner, owner.principal)
      // The card as it is names no agent: the refusal says how to name one.
      const unaddressed = await factory.createFromUrl(hub.url)
      const refused = await rpcRefusal(() =>
        unaddressed.sendMessage(request({ message: userText('sdk-card-none', 'plan it') })),
      )
      assert.equal(refused.data.code, 'invalid_request')
      assert.equal(refused.data.field, 'tenant')
      assert.match(String(refused.data.fix), /agent-card\.json\?tenant=/)
      const bad = await call(hub, 'GET', '/.well-known/agent-card.json?tenant=not-a-did')
      assert.equal(bad.status, 400)
    })

    test('what SDK 1.3.0 writes for an unset ListTasks field is read as unset', async () => {
      const task = await start('sdk-list-unset')
      // Without a status the SDK writes "UNRECOGNIZED"; a page size of 0 is ProtoJSON's unset.
      const all = await sender.listTasks({} as ListTasksRequest)
      assert.ok(all.tasks.some((t) => t.id === task.id))
      const zero = await sender.listTasks({ pageSize: 0 } as ListTasksRequest)
      assert.ok(zero.tasks.some((t) => t.id === task.id))
    })

    test('the generation helpers: a long-poll GetTask and -32010 through the SDK', async () => {
      const task = await start('sdk-helpers')
      const seen = readRelay(task.metadata)!.generation
      const held = hub.ctx.waits.waiting
      const waiting = sender.getTask({ tenant: '', id: task.id }, waitPastGeneration(seen))
      // The read is held until the task moves (a waiter registered), then answers the change.
      await Promise.race([
        hub.ctx.waits.untilWaiting(held + 1),
        waiting.then((early) => assert.fail(`the read answered before it was held: ${early.id}`)),
      ])
      await worker.sendMessage(
        request({
          message: {
            messageId: 'helpers-1',
            role: 'ROLE_AGENT',
            parts: [{ text: 'on it' }],
            taskId: task.id,
          },
          metadata: relayUpdate({ state: 'TASK_STATE_WORKING', ifGenerationMatch: seen }),
        }),
      )
      const moved = await waiting
      assert.equal(readRelay(moved.metadata)!.generation, seen + 1)
      assert.equal(moved.status?.state, TaskState.TASK_STATE_WORKING)
      // A stale generation: the SDK throws a plain transport error; the helper reads it.
      let thrown: unknown
      await worker
        .sendMessage(
          agentUpdate('helpers-2', task.id, 'TASK_STATE_COMPLETED', { ifGenerationMatch: seen }),
        )
        .catch((e: unknown) => {
          thrown = e
        })
      assert.deepEqual(readGenerationMismatch(thrown), { currentGeneration: seen + 1 })
      assert.equal(readGenerationMismatch(new Error('other')), undefined)
    })

    test('the SDK snippet of docs/a2a.md runs as written', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'baton-a2a-doc-'))
      try {
        const planner = createIdentity(`${hub.url}/.well-known/agent-net`)
        const coder = createIdentity(`${hub.url}/.well-known/agent-net`)
        await saveIdentity(path.join(dir, 'planner.identity.json'), planner)
        await saveIdentity(path.join(dir, 'coder.identity.json'), coder)
        // The coder is an admitted agent before it is addressed (open admission: its first call).
        await signedFetch(coder)(`${hub.url}/v1/me`)
        let code = docSnippet()
        code = replaceOnce(code, "'https://hub.example'", JSON.stringify(hub.url))
        for (const name of ['planner', 'coder']) {
          const file = JSON.stringify(path.join(dir, `${name}.identity.json`))
          code = replaceOnce(code, `'${name}.identity.json'`, file)
        }
        // The snippet runs outside the repository, so its imports name what they resolve to here.
        for (const spec of ['@a2a-js/sdk/client', '@a2a-js/sdk', '@baton/client']) {
          code = code.replaceAll(`from '${spec}'`, `from '${import.meta.resolve(spec)}'`)
        }
        const file = path.join(dir, 'snippet.mts')
        writeFileSync(file, code)
        await import(pathToFileURL(file).href)
        const { tasks } = await hub.ctx.a2a.list(planner.principal, {})
        assert.equal(tasks.length, 1)
        assert.equal(tasks[0]!.status.state, 'TASK_STATE_COMPLETED')
        assert.equal(tasks[0]!.generation, 2)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
}
