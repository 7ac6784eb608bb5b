import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { A2A_EXTENSION_URI } from '@baton/context'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

interface Rpc {
  result?: Record<string, unknown> & { id?: string; generation?: number; tasks?: unknown[] }
  error?: { code: number; data: { code: string; field?: string } }
}

type Answer = { status: number; body: { code?: string; field?: string } }

/** One signed A2A 1.0 JSON-RPC call over HTTP. */
async function rpc(as: SignedClient, method: string, params: object): Promise<Rpc> {
  const answer = await as.request<Rpc>(
    'POST',
    '/v1/a2a',
    { jsonrpc: '2.0', id: 1, method, params },
    { 'a2a-version': '1.0' },
  )
  return answer.body
}

/** Asserts a JSON-RPC invalid-params answer with a stable data code and field. */
function assertInvalid(answer: Rpc, field: string, what: string, code = 'invalid_request') {
  assert.equal(answer.error?.code, -32602, what)
  assert.equal(answer.error?.data.code, code, what)
  assert.equal(answer.error?.data.field, field, what)
}

// The contract is the rule: what the published schema of an A2A operation accepts, the hub
// accepts on both bindings, and what it refuses is a 400 (JSON-RPC -32602) with a stable code.
for (const store of testStores) {
  describe(`the A2A operations' contract (${store.name})`, () => {
    let hub: TestHub
    let owner: SignedClient
    let agent: SignedClient
    let taskId: string

    before(async () => {
      hub = await startTestHub(store, OPEN)
      owner = await signedAgent(hub)
      agent = await signedAgent(hub)
      const created = await rpc(owner, 'SendMessage', {
        tenant: agent.principal,
        message: { messageId: 'c-0', role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      })
      assert.equal(created.error, undefined)
      taskId = (created.result!.task as { id: string }).id
    })
    after(() => hub?.close())

    const get = (path: string) => owner.request('GET', path) as Promise<Answer>

    test('GetTask reads historyLength and currentGeneration by the whole-number codec', async () => {
      for (const q of ['', '?historyLength=0', '?historyLength=3&currentGeneration=0']) {
        assert.equal((await get(`/v1/a2a/tasks/${taskId}${q}`)).status, 200, q)
      }
      for (const [q, field] of [
        ['?historyLength=007', 'historyLength'],
        ['?historyLength=-1', 'historyLength'],
        ['?currentGeneration=1.0', 'currentGeneration'],
        ['?currentGeneration=', 'currentGeneration'],
      ] as const) {
        const res = await get(`/v1/a2a/tasks/${taskId}${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.code, 'invalid_request', q)
        assert.equal(res.body.field, field, q)
      }
      const ok = await rpc(owner, 'GetTask', { id: taskId, historyLength: '2' })
      assert.equal(ok.result?.id, taskId)
      assertInvalid(
        await rpc(owner, 'GetTask', { id: taskId, historyLength: -1 }),
        'historyLength',
        'rpc',
      )
      assertInvalid(await rpc(owner, 'GetTask', { id: '' }), 'id', 'empty id')
    })

    test('ListTasks: the SDK’s unset values are unset, other values their schema’s', async () => {
      for (const q of [
        '?pageSize=0&status=UNRECOGNIZED&contextId=&pageToken=',
        '?pageSize=100&status=TASK_STATE_SUBMITTED&includeArtifacts=true',
      ]) {
        assert.equal((await get(`/v1/a2a/tasks${q}`)).status, 200, q)
      }
      for (const [q, field] of [
        ['?pageSize=101', 'pageSize'],
        ['?pageSize=01', 'pageSize'],
        ['?status=TASK_STATE_BOGUS', 'status'],
        ['?pageToken=nonsense', 'pageToken'],
        ['?pageToken=not%20base64url', 'pageToken'],
        ['?includeArtifacts=yes', 'includeArtifacts'],
      ] as const) {
        const res = await get(`/v1/a2a/tasks${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.code, field === 'pageToken' ? 'cursor_invalid' : 'invalid_request', q)
        assert.equal(res.body.field, field, q)
      }
      const listed = await rpc(owner, 'ListTasks', { pageSize: 0, status: 'UNRECOGNIZED' })
      assert.equal(listed.error, undefined)
      assert.ok((listed.result?.tasks?.length ?? 0) >= 1)
      assertInvalid(
        await rpc(owner, 'ListTasks', { pageToken: 'nonsense' }),
        'pageToken',
        'rpc',
        'cursor_invalid',
      )
    })

    test('SendMessage: the relay update and the carried context are the message schema’s', async () => {
      const bad = await rpc(agent, 'SendMessage', {
        message: { messageId: 'c-1', role: 'ROLE_AGENT', parts: [{ text: 'x' }], taskId },
        metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_BOGUS' } },
      })
      assertInvalid(bad, `metadata.${A2A_RELAY_EXTENSION_URI}.state`, 'relay state')
      const text = await rpc(agent, 'SendMessage', {
        message: { messageId: 'c-2', role: 'ROLE_AGENT', parts: [{ text: 'x' }], taskId },
        metadata: { [A2A_RELAY_EXTENSION_URI]: { ifGenerationMatch: '01' } },
      })
      assertInvalid(text, `metadata.${A2A_RELAY_EXTENSION_URI}.ifGenerationMatch`, 'generation')
      const carried = await rpc(owner, 'SendMessage', {
        tenant: agent.principal,
        message: {
          messageId: 'c-3',
          role: 'ROLE_USER',
          parts: [{ text: 'x' }],
          metadata: { [A2A_EXTENSION_URI]: { offer: 7 } },
        },
      })
      assertInvalid(carried, `message.metadata.${A2A_EXTENSION_URI}.offer`, 'carried')
      const working = await rpc(agent, 'SendMessage', {
        message: { messageId: 'c-4', role: 'ROLE_AGENT', parts: [{ text: 'x' }], taskId },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_WORKING', ifGenerationMatch: '1' },
        },
      })
      assert.equal(working.error, undefined)
    })

    test('push configs and cancel name their task by a non-empty id', async () => {
      const res = (await owner.request('GET', `/v1/a2a/tasks/${taskId}/push-configs`)) as Answer
      assert.equal(res.status, 200)
      assertInvalid(
        await rpc(owner, 'CreateTaskPushNotificationConfig', { url: 'https://example.org/hook' }),
        'taskId',
        'no task',
      )
      assertInvalid(await rpc(owner, 'CancelTask', { id: '' }), 'id', 'cancel')
    })
  })
}
