import { contracts, WaitView } from '@baton/protocol'
import { found } from '../ops/found.js'
import { type CompositeTool, toolArg } from '../ops/mcp.js'
import { bind } from '../ops/operation.js'
import { withProgress } from '../ops/progress.js'

export const createHandoff = bind(contracts.createHandoff, (ctx, caller, { body }) =>
  ctx.handoffs.create(body, {
    ip: caller.ip,
    idempotencyKey: caller.idempotencyKey,
    carry: caller.carry,
    trace: caller.trace,
  }),
)

export const readHandoff = bind(contracts.readHandoff, (ctx, caller, { params }) =>
  ctx.handoffs.read(params.handoff_id, caller.token),
)

export const advanceHandoff = bind(contracts.advanceHandoff, (ctx, caller, { params, body }) =>
  ctx.handoffs.advance(params.handoff_id, params.state, body, caller.token, caller),
)

export const waitHandoff = bind(contracts.waitHandoff, (ctx, caller, { params, query }) =>
  withProgress(
    caller,
    Math.min(params.seconds, ctx.config.handoff.maxWaitSeconds),
    ctx.handoffs.wait(
      params.handoff_id,
      caller.token,
      params.seconds,
      query.version,
      caller.signal,
      caller.ip,
    ),
  ),
)

export const operatorListHandoffs = bind(
  contracts.operatorListHandoffs,
  async (ctx, _caller, { query }) => ({ handoffs: await ctx.handoffs.operatorList(query) }),
)

export const operatorReadHandoff = bind(
  contracts.operatorReadHandoff,
  async (ctx, _caller, { params }) => found(await ctx.handoffs.operatorRead(params.id), 'handoff'),
)

export const operatorReadHandoffPayload = bind(
  contracts.operatorReadHandoffPayload,
  async (ctx, _caller, { params }) =>
    found(await ctx.handoffs.operatorPayload(params.id), 'handoff'),
)

export const operatorNotifyQueue = bind(contracts.operatorNotifyQueue, (ctx) =>
  ctx.notifier.queue(),
)

/** Seed 002's third tool: a read, or with `wait_seconds` a wait, in one tool. */
export const readAgentHandoffTool: CompositeTool = {
  name: 'read_agent_handoff',
  title: 'Read an agent handoff',
  description: (config) =>
    `Read a handoff: state, version, payload, machine and history. With wait_seconds (at most ${config.handoff.maxWaitSeconds}; longer is clamped) it answers as soon as the handoff changes or ends; pass the version you have seen so a change in between is not missed.`,
  auth: 'handoff-token',
  args: {
    handoff_id: toolArg(readHandoff, 'params', 'handoff_id'),
    wait_seconds: toolArg(waitHandoff, 'params', 'seconds', { optional: true }),
    version: toolArg(waitHandoff, 'query', 'version'),
  },
  // A read answers the handoff; a wait adds whether it changed.
  output: WaitView.partial({ changed: true }),
  ops: [readHandoff, waitHandoff],
  annotations: { readOnlyHint: true },
  call: (invoke, args, caller) => {
    const { handoff_id, token, wait_seconds, version } = args
    const credentials = { ...caller, token: token as string | undefined }
    if (wait_seconds === undefined && version === undefined) {
      return invoke(
        readHandoff,
        { params: { handoff_id }, query: {}, body: undefined },
        credentials,
      )
    }
    return invoke(
      waitHandoff,
      {
        params: { handoff_id, seconds: wait_seconds ?? 0 },
        query: version === undefined ? {} : { version },
        body: undefined,
      },
      credentials,
    )
  },
}

/** Every token-handoff operation, in the order they are documented. */
export const handoffOperations = [createHandoff, readHandoff, advanceHandoff, waitHandoff]
/** Token-handoff tools that are not a single operation. */
export const handoffComposites = [readAgentHandoffTool]

/** The operator's handoff reads. */
export const handoffDashboardOperations = [
  operatorListHandoffs,
  operatorReadHandoff,
  operatorReadHandoffPayload,
  operatorNotifyQueue,
]
