import { a2aOperations } from '../a2a/operations.js'
import { computeOperations } from '../compute/operations.js'
import { grantOperations } from '../grants/operations.js'
import { guideOperations } from '../guides/operations.js'
import { handoffComposites, handoffOperations } from '../handoffs/operations.js'
import { homeComposites, homeOperations } from '../home/operations.js'
import { hopOperations } from '../hops/operations.js'
import { healthOperations } from '../http/operations.js'
import { identityOperations } from '../identity/operations.js'
import { messageComposites, messageOperations } from '../messages/operations.js'
import { resourceOperations } from '../resources/operations.js'
import { transferComposites, transferOperations } from '../transfers/operations.js'
import type { CompositeTool } from './mcp.js'
import type { Operation } from './operation.js'

/** Every operation of the hub, declared once each in its feature's `operations.ts`. */
export const OPERATIONS: readonly Operation[] = [
  ...handoffOperations,
  ...healthOperations,
  ...identityOperations,
  ...transferOperations,
  ...resourceOperations,
  ...grantOperations,
  ...messageOperations,
  ...homeOperations,
  ...hopOperations,
  ...computeOperations,
  ...guideOperations,
  ...a2aOperations,
]

/** MCP tools that combine operations (seed 002's read-or-wait tool). */
export const COMPOSITE_TOOLS: readonly CompositeTool[] = [
  ...handoffComposites,
  ...transferComposites,
  ...messageComposites,
  ...homeComposites,
]
