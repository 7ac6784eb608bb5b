import type { AppContext } from '../app.js'
import type { Principal } from '../identity/service.js'
import type { Invoke } from './mcp.js'

/** An `Invoke` that runs operations in this hub, as the given caller. */
export function localInvoke(
  ctx: AppContext,
  who: { ip: string; principal?: Principal | undefined },
): Invoke {
  return (op, input, caller) =>
    op.run(
      ctx,
      {
        ip: who.ip,
        principal: who.principal,
        token: caller.token,
        idempotencyKey: caller.idempotencyKey,
        signal: caller.signal,
        progress: caller.progress,
      },
      input as never,
    )
}
