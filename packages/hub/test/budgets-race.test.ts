// Issue 28: many clients on two hub instances (one PostgreSQL database) racing to spend, reserve
// and settle against one budget, and sub-offers racing to reserve from one parent: the ledger
// never passes its grant, each idempotency key charges once, and every charge is accounted for.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BudgetClient, HopClient, SignedClient } from '@baton/client'
import { BatonError, type OfferBudget } from '@baton/protocol'
import fc from 'fast-check'
import { ManualClock } from '../src/clock.js'
import { onPostgres, restartableHub, signedAgent, type TestStore } from './support.js'

const ENV = { BATON_ADMISSION: 'open', BATON_BUDGET_REAP_INTERVAL_MS: '3600000' }
const usd = (amountMicros: number): OfferBudget => ({ unit: 'usd', amountMicros })
const RACERS = 16

type Instance = Awaited<ReturnType<Awaited<ReturnType<typeof restartableHub>>['start']>>

/** Two hub instances on one fresh PostgreSQL database, with one manual clock; stopped after. */
async function onTwoInstances(
  store: TestStore,
  run: (h: { a: Instance; b: Instance; clock: ManualClock }) => Promise<void>,
): Promise<void> {
  const clock = new ManualClock(Date.now())
  const db = await restartableHub(store, ENV, clock)
  const a = await db.start()
  const b = await db.start()
  try {
    await run({ a, b, clock })
  } finally {
    await a.stop()
    await b.stop()
    await db.drop()
  }
}

/** A client of `identity` on `hub`, signing by the manual clock. */
function clientOn(hub: { url: string }, identity: SignedClient['identity'], clock: ManualClock) {
  return SignedClient.connect(`${hub.url}/.well-known/agent-net`, identity, {
    maxRetryWaitMs: 0,
    now: () => Math.floor(clock.now() / 1000),
  })
}

/** One racer's step: a spend or a reserve (settled at once) under one of a few shared keys. */
const Step = fc.record({
  kind: fc.constantFrom('spend' as const, 'reserve' as const),
  key: fc.integer({ min: 0, max: 11 }),
})
type Step = { kind: 'spend' | 'reserve'; key: number }

// A key always names the same request, so a repeat from another racer is a true repeat.
const amountOf = (key: number) => 20_000 + key * 7_919
/** What a hold under `key` is settled with: nothing, half of it, or all of it. */
const settleOf = (key: number) => Math.floor((amountOf(key) * (key % 3)) / 2)

describe('budgets racing on two instances (postgres)', { skip: onPostgres.skip }, () => {
  const store = onPostgres.store!

  test('16 clients spend and reserve against one budget: never past the grant, each key once', () =>
    onTwoInstances(store, async ({ a, b, clock }) => {
      const now = () => clock.now()
      const assistant = await signedAgent(a, { clock })
      const planner = await signedAgent(a, { clock })
      const coder = await signedAgent(a, { clock })
      const racers = await Promise.all(
        Array.from(
          { length: RACERS },
          async (_, i) =>
            new BudgetClient(await clientOn(i % 2 === 0 ? a : b, coder.identity, clock)),
        ),
      )
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(Step, { minLength: 1, maxLength: 6 }), {
            minLength: RACERS,
            maxLength: RACERS,
          }),
          async (plans: Step[][]) => {
            run++
            const first = await new HopClient(assistant).offer({
              to: planner.principal,
              dialog: `race-${run}`,
              budget: usd(1_000_000),
              ttlS: 300,
              now,
            })
            const second = await new HopClient(planner).offer({
              to: coder.principal,
              dialog: `race-${run}`,
              after: first.handoff,
              budget: usd(600_000),
              ttlS: 300,
              now,
            })
            const hop = second.signed.digest
            // What each racer was answered, by the key it used.
            const spends = new Map<number, string[]>()
            const holds = new Map<number, string[]>()
            const note = (m: Map<number, string[]>, key: number, outcome: string) =>
              m.set(key, [...(m.get(key) ?? []), outcome])
            await Promise.all(
              plans.map(async (plan, i) => {
                const racer = racers[i]!
                for (const step of plan) {
                  const amount = amountOf(step.key)
                  try {
                    if (step.kind === 'spend') {
                      const answer = await racer.spend(hop, amount, {
                        idempotencyKey: `spend-${step.key}`,
                      })
                      note(spends, step.key, answer.repeated ? 'repeated' : 'charged')
                    } else {
                      const held = await racer.reserve(hop, amount, {
                        idempotencyKey: `hold-${step.key}`,
                      })
                      await racer.settle(hop, held.holdId, settleOf(step.key))
                      note(holds, step.key, held.repeated ? 'repeated' : 'held')
                    }
                  } catch (error) {
                    if (!(error instanceof BatonError) || error.code !== 'budget_exceeded') {
                      throw error
                    }
                    note(step.kind === 'spend' ? spends : holds, step.key, 'refused')
                  }
                }
              }),
            )
            // Each key was charged at most once, and never both charged and refused.
            let expected = 0
            for (const [key, outcomes] of spends) {
              const charged = outcomes.filter((o) => o === 'charged').length
              assert.ok(charged <= 1, `spend-${key} charged ${charged} times`)
              if (charged === 1) {
                assert.ok(!outcomes.includes('refused'), `spend-${key}: ${outcomes}`)
                expected += amountOf(key)
              } else {
                assert.deepEqual(new Set(outcomes), new Set(['refused']), `spend-${key}`)
              }
            }
            for (const [key, outcomes] of holds) {
              const held = outcomes.filter((o) => o === 'held').length
              assert.ok(held <= 1, `hold-${key} held ${held} times`)
              if (held === 1) {
                assert.ok(!outcomes.includes('refused'), `hold-${key}: ${outcomes}`)
                expected += settleOf(key)
              }
            }
            const [top, ledger] = (await new BudgetClient(planner).read(hop)).budgets
            assert.equal(ledger?.hop, hop)
            // Never past the grant, and every charge accounted for exactly.
            assert.equal(ledger.spentMicros, expected)
            assert.ok(ledger.spentMicros <= 600_000)
            assert.equal(ledger.heldMicros, 0)
            assert.equal(
              ledger.remainingMicros,
              600_000 - ledger.spentMicros,
              'granted = spent + remaining once every hold is settled',
            )
            // The coder's spends count in the first hop's ledger too, its remaining untouched.
            assert.equal(top?.spentMicros, expected)
            assert.equal(top?.reservedMicros, 600_000 - expected)
            assert.equal(top?.remainingMicros, 400_000)
            // The ledger's rows agree with its figures.
            const rows = await a.ctx.database.db
              .selectFrom('budget_entries')
              .select(['kind', 'amount_micros'])
              .where('hop', '=', hop)
              .where('charged', '=', 1)
              .where('kind', 'in', ['spend', 'settle'])
              .execute()
            assert.equal(
              rows.reduce((n, r) => n + Number(r.amount_micros), 0),
              expected,
            )
          },
        ),
        { numRuns: 4 },
      )
    }))

  test('sub-offers racing for one parent on two instances reserve no more than remains', () =>
    onTwoInstances(store, async ({ a, b, clock }) => {
      const now = () => clock.now()
      const assistant = await signedAgent(a, { clock })
      const planner = await signedAgent(a, { clock })
      const coders = await Promise.all(Array.from({ length: 8 }, () => signedAgent(a, { clock })))
      const first = await new HopClient(assistant).offer({
        to: planner.principal,
        dialog: 'race-offers',
        budget: usd(1_000_000),
        ttlS: 300,
        now,
      })
      const onB = new HopClient(await clientOn(b, planner.identity, clock))
      const onA = new HopClient(planner)
      const settled = await Promise.allSettled(
        coders.map((c, i) =>
          (i % 2 === 0 ? onA : onB).offer({
            to: c.principal,
            dialog: 'race-offers',
            after: first.handoff,
            budget: usd(300_000),
            ttlS: 300,
            now,
          }),
        ),
      )
      const delivered = settled.filter((s) => s.status === 'fulfilled')
      const refused = settled.filter((s) => s.status === 'rejected')
      assert.equal(delivered.length, 3, 'three of 300,000 fit in 1,000,000')
      for (const r of refused) {
        assert.equal(
          ((r as PromiseRejectedResult).reason as BatonError).code,
          'budget_insufficient',
        )
      }
      const [top] = (await new BudgetClient(planner).read(first.signed.digest)).budgets
      assert.equal(top?.reservedMicros, 900_000)
      assert.equal(top?.remainingMicros, 100_000)
      assert.equal(top?.children, 3)
    }))
})
