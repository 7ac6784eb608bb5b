import { CompiledQuery, type QueryResult } from 'kysely'
import { namedStatement } from './database.js'

/** What a shape runs on: a kysely database or transaction of any schema. */
interface Runner {
  getExecutor(): { readonly adapter: object }
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>
}

/**
 * Hot statements whose SQL text depends only on their shape (a batch's row count, an arity):
 * kysely builds and compiles a shape the first time it is seen on a dialect, and later runs send
 * the saved text with their own parameters. Building and compiling anew was most of kysely's
 * share of a signed request's and a write batch's time. No plugin of the hub rewrites SQL, so one
 * text serves every builder of a dialect (the database and its transactions share the adapter).
 *
 * A text is kept only when the compiled parameters are exactly the ones the caller computed, in
 * order, so a shape whose parameters kysely orders otherwise is always built afresh and stays
 * right. The bound is a backstop against shapes that never repeat. Each module keeps its own
 * shapes, so their names need only be unique within it.
 */
export class CompiledShapes {
  private readonly texts = new WeakMap<object, Map<string, string>>()

  /**
   * `prefix`, when given, names each shape's text as a statement every PostgreSQL connection
   * prepares once (`namedStatement`), under `prefix` and the shape.
   */
  constructor(
    private readonly max: number,
    private readonly prefix?: string,
  ) {}

  /** Runs the statement of `shape` with `parameters`, compiling it from `build` once. */
  async run<R>(
    db: Runner,
    shape: string,
    parameters: readonly unknown[],
    build: () => CompiledQuery<R>,
  ): Promise<QueryResult<R>> {
    const { adapter } = db.getExecutor()
    let known = this.texts.get(adapter)
    if (!known) {
      known = new Map()
      this.texts.set(adapter, known)
    }
    const text = known.get(shape)
    if (text !== undefined) return db.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))
    const query = build()
    const same =
      query.parameters.length === parameters.length &&
      query.parameters.every((p, i) => p === parameters[i])
    if (same && known.size < this.max) {
      known.set(
        shape,
        this.prefix === undefined ? query.sql : namedStatement(this.prefix + shape, query.sql),
      )
    }
    return db.executeQuery<R>(query)
  }
}
