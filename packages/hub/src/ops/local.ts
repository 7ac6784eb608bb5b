import type { AppContext } from '../app.js'
import type { Principal } from '../identity/service.js'
import { parseOperationInput, TOOL_INPUT } from './input.js'
import type { Invoke } from './mcp.js'

/**
 * An `Invoke` that runs operations in this hub, as the given caller, after validating the input
 * with the operation's schemas: tool calls and composite tools reach `run` through the same one
 * parse as HTTP requests.
 */
export function localInvoke(
  ctx: AppContext,
  who: { ip: string; principal?: Principal | undefined },
): Invoke {
  return async (op, input, caller) =>
    op.run(
      ctx,
      {
        ip: who.ip,
        principal: who.principal,
        token: caller.token,
        idempotencyKey: caller.idempotencyKey,
        signal: caller.signal,
        progress: caller.progress,
        carry: caller.carry,
        trace: caller.trace,
      },
      parseOperationInput(op, input, TOOL_INPUT, ctx.config),
    )
}
