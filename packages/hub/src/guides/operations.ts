import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { listGuides, readGuide, searchGuides } from './guides.js'

export const listGuidesOp = bind(contracts.listGuides, async () => listGuides())
export const searchGuidesOp = bind(contracts.searchGuides, async (_ctx, _caller, { query }) =>
  searchGuides(query.q),
)
export const readGuideOp = bind(contracts.readGuide, async (_ctx, _caller, { params }) =>
  readGuide(params.name),
)

/** Every guide operation; all open to anonymous callers, none writes. */
export const guideOperations = [listGuidesOp, searchGuidesOp, readGuideOp]
