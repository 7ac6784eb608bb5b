import { fromHandoffJson, fromStatusJson, toHandoffJson, toStatusJson } from './carry.js'
import { A2A_EXTENSION_URI, A2A_TASK_STATE } from './constants.js'
import type { SignedElement } from './digest.js'
import type { Handoff } from './offer.js'
import type { SignedStatus, StatusObject, StatusState } from './status.js'

/** The parts of an A2A `Message` (or Cancel Task request) that carry the element. */
export interface A2AMetadataCarrier {
  /** A2A metadata map. */
  metadata?: { [key: string]: unknown } | undefined
}

/** The parts of an A2A `Message` that carry a handoff: metadata and the extensions list. */
export interface A2AMessageCarrier extends A2AMetadataCarrier {
  /** URIs of extensions present in the message. */
  extensions?: string[]
}

/** The parts of an A2A `Task` whose status message may carry a status. */
export interface A2ATaskCarrier {
  /** The task status with its message. */
  status?: { message?: A2AMessageCarrier | undefined } | undefined
}

/** An A2A v1.0 task state name, as in the A2A JSON form. */
export type A2ATaskStateName = (typeof A2A_TASK_STATE)[StatusState]

/**
 * Puts a Handoff object into an A2A Message: metadata under the extension URI, and the URI listed
 * in `extensions`. Returns a new message.
 * @example const msg = withA2AHandoff({ messageId, role, parts, ... }, handoff)
 */
// seed 003: the Handoff object goes in Message.metadata under the extension URI, and that URI is
// listed in Message.extensions
export function withA2AHandoff<M extends object>(
  message: M,
  handoff: Handoff,
): M & { metadata: { [key: string]: unknown }; extensions: string[] } {
  const m = message as A2AMessageCarrier
  const extensions = m.extensions ?? []
  return {
    ...message,
    metadata: { ...(m.metadata ?? {}), [A2A_EXTENSION_URI]: toHandoffJson(handoff) },
    extensions: extensions.includes(A2A_EXTENSION_URI)
      ? [...extensions]
      : [...extensions, A2A_EXTENSION_URI],
  }
}

/**
 * Takes the Handoff object out of an A2A Message; undefined when none is carried, and
 * ContextError('bad-signature') when the carried value is malformed.
 */
export function readA2AHandoff(message: object): Handoff | undefined {
  const v = (message as A2AMessageCarrier).metadata?.[A2A_EXTENSION_URI]
  return v === undefined ? undefined : fromHandoffJson(v)
}

/**
 * Puts a Status object into an A2A Message (a reply, or a Task's status message) or a Cancel Task
 * request's metadata, under the extension URI. Returns a new carrier.
 */
// seed 003: a status goes under the same key in the metadata of the reply Message or of the
// returned Task's status message; a canceled status in the metadata of the Cancel Task request
export function withA2AStatus<C extends object>(
  carrier: C,
  status: SignedStatus | SignedElement | StatusObject,
): C & { metadata: { [key: string]: unknown } } {
  const c = carrier as A2AMessageCarrier
  const out = {
    ...carrier,
    metadata: { ...(c.metadata ?? {}), [A2A_EXTENSION_URI]: toStatusJson(status) },
  }
  // a Message lists the extensions it carries; a Cancel Task request has no such list
  if (Array.isArray(c.extensions) && !c.extensions.includes(A2A_EXTENSION_URI)) {
    return { ...out, extensions: [...c.extensions, A2A_EXTENSION_URI] }
  }
  return out
}

/** Takes the Status object out of an A2A Message or Cancel Task request, if carried. */
export function readA2AStatus(carrier: object): StatusObject | undefined {
  const v = (carrier as A2AMetadataCarrier).metadata?.[A2A_EXTENSION_URI]
  return v === undefined ? undefined : fromStatusJson(v)
}

/** Takes the Status object out of a Task's status message, if carried. */
export function readA2ATaskStatus(task: object): StatusObject | undefined {
  const msg = (task as A2ATaskCarrier).status?.message
  return msg === undefined ? undefined : readA2AStatus(msg)
}

/** The nearest A2A task state for a handoff state. */
// seed 003: handoff states map to the nearest A2A task states
export function toA2ATaskState(state: StatusState): A2ATaskStateName {
  return A2A_TASK_STATE[state]
}

/**
 * The handoff state an A2A task state corresponds to; undefined for states with no handoff entry
 * (INPUT_REQUIRED, AUTH_REQUIRED, SUBMITTED, UNSPECIFIED), which do not change the hop's state.
 * Accepts the v1.0 names and the lower-case v0.3 names.
 */
// seed 003: A2A states with no handoff entry stay in the host protocol and do not change the hop
export function fromA2ATaskState(taskState: string): StatusState | undefined {
  const name = taskState.startsWith('TASK_STATE_')
    ? taskState
    : `TASK_STATE_${taskState.toUpperCase().replace(/-/g, '_')}`
  for (const [state, a2a] of Object.entries(A2A_TASK_STATE)) {
    if (a2a === name) return state as StatusState
  }
  return undefined
}
