export { type AppContext, createApp, VERSION } from './app.js'
export { type Clock, ManualClock, systemClock } from './clock.js'
export { type Config, loadConfig } from './config.js'
export { type RunningHub, startHub } from './hub.js'
