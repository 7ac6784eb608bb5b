/**
 * Baton's A2A extension (issue 16): the metadata key of tasks and events that carries
 * `generation`, `owner` and `agent` for A2A 1.0 peers, whose types drop the dev-1.1 fields, and
 * under which the agent of a task sets its state and artifacts in its own SendMessage.
 */
export const A2A_RELAY_EXTENSION_URI = 'urn:baton:a2a:relay:v1'
