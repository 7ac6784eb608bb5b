import { a2aDashboardOperations, a2aOperations } from '../a2a/operations.js'
import { budgetDashboardOperations, budgetOperations } from '../budgets/operations.js'
import { computeDashboardOperations, computeOperations } from '../compute/operations.js'
import { grantDashboardOperations, grantOperations } from '../grants/operations.js'
import { guideOperations } from '../guides/operations.js'
import {
  handoffComposites,
  handoffDashboardOperations,
  handoffOperations,
} from '../handoffs/operations.js'
import { homeOperations } from '../home/operations.js'
import { hopDashboardOperations, hopOperations } from '../hops/operations.js'
import { healthOperations } from '../http/operations.js'
import { identityOperations } from '../identity/operations.js'
import {
  messageComposites,
  messageDashboardOperations,
  messageOperations,
} from '../messages/operations.js'
import { overviewOperations } from '../overview/operations.js'
import { resourceDashboardOperations, resourceOperations } from '../resources/operations.js'
import {
  transferComposites,
  transferDashboardOperations,
  transferOperations,
} from '../transfers/operations.js'
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
  ...budgetOperations,
  ...computeOperations,
  ...guideOperations,
  ...a2aOperations,
  // The operator's reads, which the dashboard shows.
  ...overviewOperations,
  ...handoffDashboardOperations,
  ...transferDashboardOperations,
  ...resourceDashboardOperations,
  ...grantDashboardOperations,
  ...messageDashboardOperations,
  ...hopDashboardOperations,
  ...budgetDashboardOperations,
  ...computeDashboardOperations,
  ...a2aDashboardOperations,
]

/** MCP tools that combine operations (seed 002's read-or-wait tool). */
export const COMPOSITE_TOOLS: readonly CompositeTool[] = [
  ...handoffComposites,
  ...transferComposites,
  ...messageComposites,
]
