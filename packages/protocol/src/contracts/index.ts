import type { Contract } from '../contract.js'
import { a2aContracts, a2aDashboardContracts } from './a2a.js'
import { budgetContracts, budgetDashboardContracts } from './budgets.js'
import { computeContracts, computeDashboardContracts } from './compute.js'
import { grantContracts, grantDashboardContracts } from './grants.js'
import { guideContracts } from './guides.js'
import { handoffContracts, handoffDashboardContracts } from './handoffs.js'
import { healthContracts } from './health.js'
import { homeContracts } from './home.js'
import { hopContracts, hopDashboardContracts } from './hops.js'
import { identityContracts } from './identity.js'
import { messageContracts, messageDashboardContracts } from './messages.js'
import { overviewContracts } from './overview.js'
import { resourceContracts, resourceDashboardContracts } from './resources.js'
import { transferContracts, transferDashboardContracts } from './transfers.js'

export * from './a2a.js'
export * from './budgets.js'
export * from './compute.js'
export * from './grants.js'
export * from './guides.js'
export * from './handoffs.js'
export * from './health.js'
export * from './home.js'
export * from './hops.js'
export * from './identity.js'
export * from './messages.js'
export * from './overview.js'
export * from './resources.js'
export * from './transfers.js'

/** Every contract of a Baton hub, in the order they are documented. */
export const CONTRACTS: readonly Contract[] = [
  ...handoffContracts,
  ...healthContracts,
  ...identityContracts,
  ...transferContracts,
  ...resourceContracts,
  ...grantContracts,
  ...messageContracts,
  ...homeContracts,
  ...hopContracts,
  ...budgetContracts,
  ...computeContracts,
  ...guideContracts,
  ...a2aContracts,
  // The operator's reads, which the dashboard shows.
  ...overviewContracts,
  ...handoffDashboardContracts,
  ...transferDashboardContracts,
  ...resourceDashboardContracts,
  ...grantDashboardContracts,
  ...messageDashboardContracts,
  ...hopDashboardContracts,
  ...budgetDashboardContracts,
  ...computeDashboardContracts,
  ...a2aDashboardContracts,
] as readonly Contract[]
