import { MCP_META_KEY, readMcpHandoff, toStatusJson } from '@baton/context'
import { BatonError, contracts, type OfferedHopView } from '@baton/protocol'
import { found } from '../ops/found.js'
import { bind, type ToolMeta } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

/**
 * seed 003 (MCP carrying): the Handoff object goes under the carrying key in the `_meta` of the
 * request params, and a status under the same key in the CallToolResult's `_meta`. The hub signs
 * no status of its own; the result carries the hop's last status, which is how a delegator over
 * MCP learns of a later one by retransmitting.
 */
const offerMeta: ToolMeta = {
  read(args: Record<string, unknown>, meta: Record<string, unknown>): Record<string, unknown> {
    if (!(MCP_META_KEY in meta)) return args
    let handoff: unknown
    try {
      handoff = readMcpHandoff(meta)
    } catch {
      throw new BatonError('invalid_request', 'The Handoff object in _meta is malformed', {
        field: '_meta',
      })
    }
    if (args.handoff !== undefined && JSON.stringify(args.handoff) !== JSON.stringify(handoff)) {
      throw new BatonError('invalid_request', 'The arguments and _meta carry different handoffs', {
        field: 'handoff',
      })
    }
    return { ...args, handoff }
  },
  write(result: unknown): Record<string, unknown> | undefined {
    const status = (result as OfferedHopView | undefined)?.hop.lastStatus
    return status ? { [MCP_META_KEY]: toStatusJson(status) } : undefined
  },
}

export const offerHandoff = bind(
  contracts.offerHandoff,
  (ctx, caller, { body }) => ctx.hops.offer(signer(caller), body, caller),
  { toolMeta: offerMeta },
)

export const answerHandoff = bind(contracts.answerHandoff, (ctx, caller, { body }) =>
  ctx.hops.answer(signer(caller), body, caller),
)

export const listHopInbox = bind(contracts.listHopInbox, (ctx, caller, { query }) =>
  ctx.hops.inbox(signer(caller), query),
)

export const readHop = bind(contracts.readHop, (ctx, caller, { params }) =>
  ctx.hops.read(signer(caller), params.digest),
)

export const readHopChain = bind(contracts.readHopChain, (ctx, caller, { params }) =>
  ctx.hops.chain(signer(caller), params.digest),
)

export const operatorListHops = bind(contracts.operatorListHops, async (ctx) => ({
  hops: await ctx.hops.recent(),
}))

export const operatorReadHopChain = bind(
  contracts.operatorReadHopChain,
  async (ctx, _caller, { params }) => found(await ctx.hops.operatorChain(params.digest), 'hop'),
)

/** Every hop operation, in the order they are documented. */
export const hopOperations = [offerHandoff, answerHandoff, listHopInbox, readHop, readHopChain]

/** The operator's hop reads. */
export const hopDashboardOperations = [operatorListHops, operatorReadHopChain]
