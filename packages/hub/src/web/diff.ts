// The resource page's change list moved to the resource feature, which computes it.
export { diffJson, type JsonChange } from '../resources/diff.js'
