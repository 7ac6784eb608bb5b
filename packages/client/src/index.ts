export { HandoffClient } from './handoffs.js'
export { type CallOptions, callJson, type RawAnswer, requestJson } from './http.js'
