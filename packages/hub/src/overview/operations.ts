import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { overview } from './service.js'

/** The operator's overview: what the dashboard opens on. */
export const operatorOverview = bind(contracts.operatorOverview, (ctx) => overview(ctx))

/** Reads that gather every feature's part. */
export const overviewOperations = [operatorOverview]
