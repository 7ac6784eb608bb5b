export * from './errors.js'
export * from './handoff.js'
export * from './identity.js'
