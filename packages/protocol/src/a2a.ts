/**
 * Baton's A2A extension (issue 16): the metadata key of tasks and events that carries
 * `generation`, `owner` and `agent` for A2A 1.0 peers, whose types drop the dev-1.1 fields, and
 * under which the agent of a task sets its state and artifacts in its own SendMessage.
 */
export const A2A_RELAY_EXTENSION_URI = 'urn:baton:a2a:relay:v1'

/** The A2A extension URI: the metadata key, also listed in `Message.extensions`. */
// seed 003: the A2A carrying key
export const A2A_EXTENSION_URI = 'https://quantumlearningmachines.com/a2a/ext/agent-handoff/v1'

/** The MCP `_meta` key for the handoff object and statuses. */
// seed 003: the MCP carrying key
export const MCP_META_KEY = 'quantumlearningmachines.com/agent-handoff'
