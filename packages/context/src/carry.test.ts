import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { agents, T0 } from '../test/fixtures.js'
import {
  fromA2ATaskState,
  readA2AHandoff,
  readA2AStatus,
  readA2ATaskStatus,
  toA2ATaskState,
  withA2AHandoff,
  withA2AStatus,
} from './carry-a2a.js'
import { readMcpHandoff, readMcpStatus, withMcpHandoff, withMcpStatus } from './carry-mcp.js'
import { A2A_EXTENSION_URI, MCP_META_KEY } from './constants.js'
import { signOffer, toHandoff } from './offer.js'
import { signStatus } from './status.js'

const P = 'spiffe://a.example/agent/planner'
const C = 'spiffe://b.example/agent/coder'
const [planner, coder] = (await agents([P, C])) as [
  Awaited<ReturnType<typeof agents>>[0],
  Awaited<ReturnType<typeof agents>>[0],
]
const offer = signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0 })
const handoff = toHandoff(offer)
const status = signStatus({
  signer: coder.signer,
  offer: offer.element,
  state: 'accepted',
  iat: T0,
})

describe('A2A carrying', () => {
  test('the handoff goes in metadata under the URI, and the URI is listed in extensions', () => {
    const msg = withA2AHandoff(
      { messageId: 'm1', metadata: { other: 1 }, extensions: ['urn:x'] },
      handoff,
    )
    assert.deepEqual(msg.metadata?.[A2A_EXTENSION_URI], { offer: offer.element })
    assert.equal(msg.metadata?.other, 1)
    assert.deepEqual(msg.extensions, ['urn:x', A2A_EXTENSION_URI])
    assert.deepEqual(withA2AHandoff(msg, handoff).extensions, ['urn:x', A2A_EXTENSION_URI])
    assert.deepEqual(readA2AHandoff(msg), { offer: offer.element })
    assert.equal(readA2AHandoff({ metadata: {} }), undefined)
  })

  test('a status on a reply message, a task status message, or a cancel request', () => {
    const reply = withA2AStatus({ messageId: 'r', extensions: [] as string[] }, status)
    assert.deepEqual(readA2AStatus(reply), { status: status.element })
    assert.deepEqual(reply.extensions, [A2A_EXTENSION_URI])
    const task = { status: { message: reply } }
    assert.deepEqual(readA2ATaskStatus(task), { status: status.element })
    const cancel = withA2AStatus({ id: 'task-1', tenant: '', metadata: undefined }, status)
    assert.deepEqual(readA2AStatus(cancel), { status: status.element })
  })

  test('malformed carried values are bad-signature; COSE bytes do not travel in JSON', () => {
    assert.throws(() => readA2AHandoff({ metadata: { [A2A_EXTENSION_URI]: { offer: 1 } } }), {
      reason: 'bad-signature',
    })
    assert.throws(() => readA2AStatus({ metadata: { [A2A_EXTENSION_URI]: 'x' } }), {
      reason: 'bad-signature',
    })
    const cose = signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0, format: 'cose' })
    assert.throws(() => withA2AHandoff({}, toHandoff(cose)), { reason: 'invalid-input' })
  })

  test('the state map, both ways', () => {
    assert.equal(toA2ATaskState('accepted'), 'TASK_STATE_WORKING')
    assert.equal(toA2ATaskState('rejected'), 'TASK_STATE_REJECTED')
    assert.equal(toA2ATaskState('completed'), 'TASK_STATE_COMPLETED')
    assert.equal(toA2ATaskState('failed'), 'TASK_STATE_FAILED')
    assert.equal(toA2ATaskState('canceled'), 'TASK_STATE_CANCELED')
    assert.equal(fromA2ATaskState('TASK_STATE_COMPLETED'), 'completed')
    assert.equal(fromA2ATaskState('working'), 'accepted')
    for (const s of [
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_AUTH_REQUIRED',
      'input-required',
      'TASK_STATE_SUBMITTED',
    ]) {
      assert.equal(fromA2ATaskState(s), undefined)
    }
  })
})

describe('MCP carrying', () => {
  test('the handoff under _meta of request params', () => {
    const params = withMcpHandoff(
      { name: 'write_patch', arguments: {}, _meta: { progressToken: 1 } },
      handoff,
    )
    assert.deepEqual(params._meta?.[MCP_META_KEY], { offer: offer.element })
    assert.equal(params._meta?.progressToken, 1)
    assert.deepEqual(readMcpHandoff(params), { offer: offer.element })
    assert.deepEqual(readMcpHandoff(params._meta!), { offer: offer.element })
    assert.equal(readMcpHandoff({ name: 'x' }), undefined)
  })

  test('a status under _meta of a result or a cancelled notification', () => {
    const result = withMcpStatus({ content: [] }, status)
    assert.deepEqual(readMcpStatus(result), { status: status.element })
    const cancelled = withMcpStatus({ requestId: 7, reason: 'user' }, status.element)
    assert.deepEqual(readMcpStatus(cancelled), { status: status.element })
  })
})
