// A worker thread does not inherit the TypeScript loader of the thread that started it, so each
// compute worker registers it before loading its body.
import { register } from 'tsx/esm/api'

register()
await import('./worker.ts')
