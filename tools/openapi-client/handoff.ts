// A token handoff through a client generated from the hub's OpenAPI document alone: if the
// document is wrong about a path, a parameter or an answer, this does not compile or fails.
import createClient from 'openapi-fetch'
import type { paths } from './generated/schema.js'

const client = createClient<paths>({ baseUrl: process.env.BATON_HUB_URL })

const created = await client.POST('/services/v1/handoff', {
  body: { payload: { task: 'translate', words: 120 }, note: 'from a generated client' },
})
if (!created.data) throw new Error(`create failed: ${JSON.stringify(created.error)}`)
const { handoff_id, owner_token, receiver_token } = created.data

const moved = await client.POST('/services/v1/handoff/{handoff_id}/{state}', {
  params: { path: { handoff_id, state: 'accepted' } },
  headers: { authorization: `Bearer ${receiver_token}` },
  body: { from: 'offered', nonce: 'generated-1' },
})
if (!moved.data) throw new Error(`move failed: ${JSON.stringify(moved.error)}`)

const conflict = await client.POST('/services/v1/handoff/{handoff_id}/{state}', {
  params: { path: { handoff_id, state: 'working' } },
  headers: { authorization: `Bearer ${owner_token}` },
  body: { from: 'offered' },
})

const read = await client.GET('/services/v1/handoff/{handoff_id}', {
  params: { path: { handoff_id } },
  headers: { authorization: `Bearer ${owner_token}` },
})
if (!read.data) throw new Error(`read failed: ${JSON.stringify(read.error)}`)

console.log(
  JSON.stringify({
    created: created.response.status,
    moved: { status: moved.response.status, state: moved.data.state, version: moved.data.version },
    conflict: { status: conflict.response.status, code: conflict.error?.code },
    read: { state: read.data.state, history: read.data.history.length },
  }),
)
