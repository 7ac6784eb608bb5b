import { BatonError, DEFAULT_MACHINE, type MachineView } from '@baton/protocol'

/** A handoff's machine with every non-final state's moves spelled out. */
export type Machine = MachineView

/** The machine of seed 002: each state may move to any later one; the last three are final. */
export function defaultMachine(): Machine {
  return buildMachine([...DEFAULT_MACHINE.states], [...DEFAULT_MACHINE.final], {})
}

function buildMachine(
  states: string[],
  final: string[],
  transitions: Record<string, string[]>,
): Machine {
  const finalSet = new Set(final)
  const resolved: Record<string, string[]> = {}
  states.forEach((state, i) => {
    if (finalSet.has(state)) return
    // seed 002: without declared transitions, a state may move to any later one.
    resolved[state] = transitions[state] ?? states.slice(i + 1)
  })
  return { states, final: states.filter((s) => finalSet.has(s)), transitions: resolved }
}

function invalid(message: string, field: string): never {
  throw new BatonError('invalid_machine', message, { field })
}

/**
 * Checks a custom machine and spells out its moves. A machine only moves forward, so a history
 * holds at most one entry per state (seed 002). When `final` is omitted the last state is final.
 */
export function parseMachine(
  input: { states?: string[]; final?: string[]; transitions?: Record<string, string[]> },
  maxStates: number,
): Machine {
  if (input.states === undefined) {
    if (input.final !== undefined || input.transitions !== undefined) {
      invalid('`final` and `transitions` declare a machine only together with `states`', 'states')
    }
    return defaultMachine()
  }
  const { states } = input
  if (states.length < 2) invalid('A machine needs at least two states', 'states')
  if (states.length > maxStates) {
    invalid(`A machine has at most ${maxStates} states, got ${states.length}`, 'states')
  }
  const index = new Map<string, number>()
  for (const [i, s] of states.entries()) {
    if (index.has(s)) invalid(`State ${JSON.stringify(s)} is declared twice`, 'states')
    index.set(s, i)
  }
  const final = input.final ?? [states[states.length - 1]!]
  const finalSet = new Set<string>()
  for (const s of final) {
    if (!index.has(s)) invalid(`Final state ${JSON.stringify(s)} is not a declared state`, 'final')
    if (finalSet.has(s)) invalid(`Final state ${JSON.stringify(s)} is listed twice`, 'final')
    finalSet.add(s)
  }
  if (finalSet.size === 0) invalid('A machine needs at least one final state', 'final')
  if (finalSet.has(states[0]!)) {
    invalid(`The initial state ${JSON.stringify(states[0])} cannot be final`, 'final')
  }
  const transitions = input.transitions ?? {}
  for (const [from, targets] of Object.entries(transitions)) {
    const i = index.get(from)
    if (i === undefined) {
      invalid(`Transitions name an undeclared state ${JSON.stringify(from)}`, 'transitions')
    }
    if (finalSet.has(from)) {
      invalid(`Final state ${JSON.stringify(from)} cannot have transitions`, 'transitions')
    }
    const seen = new Set<string>()
    for (const to of targets) {
      const j = index.get(to)
      if (j === undefined) {
        invalid(`Transition ${from} -> ${to} names an undeclared state`, `transitions.${from}`)
      }
      if (j <= i) {
        invalid(`Transition ${from} -> ${to} does not move forward`, `transitions.${from}`)
      }
      if (seen.has(to))
        invalid(`Transition ${from} -> ${to} is listed twice`, `transitions.${from}`)
      seen.add(to)
    }
  }
  const machine = buildMachine(states, [...finalSet], transitions)
  for (const [state, moves] of Object.entries(machine.transitions)) {
    if (moves.length === 0) {
      invalid(`State ${JSON.stringify(state)} is not final and has no move forward`, 'transitions')
    }
  }
  return machine
}

/** The states a handoff may move to from `state`; empty for a final state. */
export function allowedNext(machine: Machine, state: string): string[] {
  return machine.transitions[state] ?? []
}

/** Whether `state` ends the handoff. */
export function isFinal(machine: Machine, state: string): boolean {
  return machine.final.includes(state)
}
