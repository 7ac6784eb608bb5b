// A worker thread does not inherit the TypeScript loader of the thread that started it, so the
// SQLite checkpoint thread registers it before loading its body.
import { register } from 'tsx/esm/api'

register()
await import('./sqlite-checkpointer.ts')
