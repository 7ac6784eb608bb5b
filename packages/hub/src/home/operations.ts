import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

export const writeHomeFile = bind(contracts.writeHomeFile, (ctx, caller, { body }) =>
  ctx.home.write(signer(caller), body, caller),
)

export const readHomeFile = bind(contracts.readHomeFile, (ctx, caller, { query }) =>
  ctx.home.read(signer(caller), query.path),
)

export const listHomeFiles = bind(contracts.listHomeFiles, (ctx, caller, { query }) =>
  ctx.home.list(signer(caller), query),
)

export const deleteHomeFile = bind(contracts.deleteHomeFile, (ctx, caller, { query }) =>
  ctx.home.remove(signer(caller), query.path, query.expectedRevision, caller),
)

/** Every home file operation, in the order they are documented. */
export const homeOperations = [writeHomeFile, readHomeFile, listHomeFiles, deleteHomeFile]
