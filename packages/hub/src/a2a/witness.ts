import { A2A_EXTENSION_URI } from '@baton/context'
import type { A2aMessage } from '@baton/protocol'
import { BatonError } from '@baton/protocol'
import type { HopService } from '../hops/service.js'
import type { Carrying } from '../store/transaction.js'

/**
 * Checks the signed handoff context an A2A message carries (seed 003: the Handoff object, or a
 * status, in `Message.metadata` under the extension URI) with the hop service, so the hub
 * witnesses a hop relayed as A2A exactly as one posted to `/v1/hops`. A user message carries an
 * offer to `agent`; an agent's message carries a status for a hop it is the delegate of. Answers
 * the hub's view of the hop, or undefined when the message carries nothing; a refusal throws.
 * Its shape is the message schema's; which of the two a message may carry is its role's rule.
 */
export async function witnessA2a(
  hops: HopService,
  sender: string,
  agent: string,
  message: A2aMessage,
  by: Carrying = {},
): Promise<unknown> {
  const carried = message.metadata?.[A2A_EXTENSION_URI]
  if (carried === undefined) return undefined
  if (message.role === 'ROLE_AGENT') {
    if ('status' in carried) return hops.answer(sender, carried, by)
  } else if ('offer' in carried) {
    return hops.offer(sender, { to: agent, handoff: carried }, by)
  }
  throw new BatonError(
    'invalid_request',
    'A user message carries a Handoff object, an agent message a signed status',
    { field: `message.metadata.${A2A_EXTENSION_URI}` },
  )
}
