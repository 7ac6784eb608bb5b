import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { signedFetch } from '@baton/client'
import { ERRORS, type ErrorCode } from '@baton/protocol'
import { ManualClock } from '../src/clock.js'
import { operationErrors } from '../src/ops/auth.js'
import type { Operation } from '../src/ops/operation.js'
import { COMPOSITE_TOOLS, OPERATIONS } from '../src/ops/registry.js'
import {
  AGENT_ROLES,
  CALLERS,
  CASES,
  type Caller,
  type Expect,
  HIDDEN_CODES,
  missingLike,
} from './matrix-cases.js'
import { type Answer, type MatrixHub, startMatrixHub } from './matrix-hub.js'
import { testStores } from './support.js'

// Every operation of the registry against every kind of caller, on both stores. What a cell
// answers follows from the operation's `auth` for the callers it refuses before the service
// sees them, and from the operation's row of CASES for those who get through.

/** What `caller` must be answered for `op`: `ok` (its success status) or an error code. */
function expected(op: Operation, caller: Caller): Expect {
  const row = CASES[op.name]!.expect
  switch (op.auth) {
    case 'none':
      return row[caller] ?? row.others ?? 'ok'
    case 'handoff-token':
      // The owner holds the handoff's own token; a signature is no token at all.
      if (caller === 'owner') return row.owner ?? 'ok'
      if (caller === 'otherToken' || caller === 'operator') return 'handoff_not_found'
      return 'token_missing'
    case 'signature':
      if (caller === 'anonymous' || caller === 'otherToken' || caller === 'operator') {
        return 'signature_missing'
      }
      if (caller === 'pending') return row.pending ?? 'admission_pending'
      if (caller === 'rejected') return row.rejected ?? 'admission_rejected'
      if (caller === 'suspended') return row.suspended ?? 'principal_suspended'
      return row[caller] ?? row.others ?? 'ok'
    case 'operator':
      return caller === 'operator' ? (row.operator ?? 'ok') : 'admin_token_invalid'
  }
}

/** The answer as a cell reads it: `ok`, or the code of a refusal (`?` when it has none). */
function outcome(op: Operation, a: Answer): string {
  if (a.status === (op.status ?? 200)) return 'ok'
  return typeof a.body.code === 'string' ? a.body.code : `? ${a.status}`
}

/**
 * The callers of an operation's MCP tool at /mcp: every admitted signer; for a token handoff, the
 * holder of the handoff's token and of another's (the token is an argument); unsigned too for an
 * operation that needs no auth. Pending, rejected and suspended signers are refused the session.
 */
function toolCallers(op: Operation): Caller[] {
  if (op.tool === false && !CASES[op.name]?.tool) return []
  switch (op.auth) {
    case 'none':
      return ['anonymous', ...AGENT_ROLES]
    case 'handoff-token':
      return ['owner', 'otherToken']
    case 'signature':
      return [...AGENT_ROLES]
    case 'operator':
      return []
  }
}

test('the matrix has a row for every operation of the registry and for nothing else', () => {
  const names = OPERATIONS.map((op) => op.name).sort()
  assert.deepEqual(Object.keys(CASES).sort(), names)
})

test('every operation a composite tool reaches is called through a tool in the matrix', () => {
  for (const c of COMPOSITE_TOOLS) {
    for (const op of c.ops) {
      if (op.tool !== false) continue
      assert.notEqual(CASES[op.name]!.tool, undefined, `${op.name} (reached by ${c.name})`)
    }
  }
})

for (const store of testStores) {
  describe(`authorization matrix (${store.name})`, () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    let m: MatrixHub
    before(async () => {
      m = await startMatrixHub(store, clock)
    })
    after(() => m.close())

    for (const op of OPERATIONS) {
      test(`${op.method} ${op.path} (${op.name})`, async () => {
        const row = CASES[op.name]
        assert.ok(row, `${op.name} has no row in the matrix`)
        const want = Object.fromEntries(CALLERS.map((c) => [c, expected(op, c)]))
        const seen: Record<string, string> = {}
        const check = async (caller: Caller) => {
          const { path, body } = row.request(m.f, caller)
          const a = await m.send(op, caller, path, body)
          seen[caller] = outcome(op, a)
          if (seen[caller] !== want[caller]) return
          if (want[caller] === 'ok') return
          const code = want[caller] as ErrorCode
          assert.equal(a.status, ERRORS[code].status, `${caller}: the status of ${code}`)
          assert.ok(operationErrors(op).includes(code), `${op.name} does not declare ${code}`)
          const id = row.hides?.(m.f)
          if (!id || !HIDDEN_CODES.includes(code)) return
          // A caller who may not see the item is answered exactly as for an id that is not there.
          const missing = missingLike(id)
          const b = await m.send(op, caller, path.replace(id, missing), body)
          const strip = (x: Answer) =>
            JSON.stringify(x).replaceAll(id, '<id>').replaceAll(missing, '<id>')
          assert.equal(strip(a), strip(b), `${caller} tells ${op.name}'s item from a missing one`)
        }
        // The same cells through the operation's MCP tool, which must answer each caller alike.
        const viaTool: Record<string, string> = {}
        const checkTool = async (caller: Caller) => {
          const { path, body } = row.request(m.f, caller)
          const a = await m.callTool(op, caller, path, body)
          viaTool[caller] = a.outcome
          const id = row.hides?.(m.f)
          if (!id || !HIDDEN_CODES.includes(a.outcome as ErrorCode)) return
          const missing = missingLike(id)
          const b = await m.callTool(op, caller, path, body, { id, missing })
          const strip = (t: string) => t.replaceAll(id, '<id>').replaceAll(missing, '<id>')
          assert.equal(strip(a.text), strip(b.text), `${caller} tells the item from a missing one`)
        }
        const recorded = (c: Caller) => row.records?.includes(c) ?? false
        const isRefused = (c: Caller) => want[c] !== 'ok' && !recorded(c)
        const tools = toolCallers(op)
        const writes = op.method !== 'GET'
        const stateBefore = writes ? await m.readState() : undefined
        await Promise.all(CALLERS.filter(isRefused).map(check))
        await Promise.all(tools.filter(isRefused).map(checkTool))
        if (writes) assert.deepEqual(await m.readState(), stateBefore, 'a refusal changed state')
        await Promise.all(CALLERS.filter((c) => !isRefused(c)).map(check))
        await Promise.all(tools.filter((c) => !isRefused(c)).map(checkTool))
        assert.deepEqual(seen, want)
        assert.deepEqual(viaTool, Object.fromEntries(tools.map((c) => [c, want[c]])), 'over MCP')
        const toolName = op.tool ? op.tool.name : row.tool?.(m.f, 'owner').name
        if (toolName && op.auth === 'signature') {
          assert.equal(m.unsignedTools.has(toolName), false, 'offered to an unsigned session')
        }
      })
    }

    // A write that takes no body still parses one it is sent: its answer must be declared too.
    test('a body an operation cannot read is refused with a code the operation declares', async () => {
      const bodies = [
        { type: 'application/json', text: '{', code: 'invalid_json' },
        { type: 'text/plain', text: 'not json', code: 'unsupported_media_type' },
      ] as const
      for (const op of OPERATIONS) {
        if (op.method === 'GET') continue
        const caller: Caller = op.auth === 'operator' ? 'operator' : 'owner'
        const { path } = CASES[op.name]!.request(m.f, caller)
        for (const raw of bodies) {
          const a = await m.send(op, caller, path, undefined, raw)
          assert.equal(a.body.code, raw.code, `${op.name}: ${raw.type}`)
          assert.equal(a.status, ERRORS[raw.code].status, `${op.name}: ${raw.type}`)
          assert.ok(
            operationErrors(op).includes(raw.code),
            `${op.name} does not declare ${raw.code}`,
          )
        }
      }
    })

    test('pending, rejected and suspended signers are refused an MCP session, as under /v1', async () => {
      const now = () => Math.floor(clock.now() / 1000)
      for (const [who, code] of [
        ['pending', 'admission_pending'],
        ['rejected', 'admission_rejected'],
        ['suspended', 'principal_suspended'],
      ] as const) {
        const res = await signedFetch(m.agents[who].identity, { now })(`${m.hub.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
        assert.equal(res.status, ERRORS[code].status, who)
        assert.equal(((await res.json()) as { code: string }).code, code, who)
      }
    })

    test('listings show the resource only to its owner and its live read grantee', async () => {
      for (const who of AGENT_ROLES) {
        const list = await m.agents[who].call<{ resources: { id: string }[] }>(
          'GET',
          '/v1/resources?namespace=matrix',
        )
        const listed = list.resources.some((r) => r.id === m.f.resource)
        assert.equal(listed, who === 'owner' || who === 'granteeRead', who)
      }
    })
  })
}
