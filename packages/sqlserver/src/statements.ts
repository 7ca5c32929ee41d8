// Every statement the store can send is declared here once, with its parameters and their
// T-SQL types, so that nothing is missed by the tests that check them without a server (each
// text parses in a T-SQL grammar; each parameter's type matches the column it meets). A
// statement's text starts with one `DECLARE` of typed locals assigned from positional
// parameters (`@1`, `@2`, …) and then names only the locals: the same text runs on the store's
// own pool (the driver binds `@1` … untyped) and through a caller's executor (Kysely's mssql
// dialect binds `@1` … the same way), and the declared types, not the driver's guesses, are what
// the statement computes with.

/** A declared statement: a name unique in the store, typed parameters, and its text given the quoted schema. */
export interface Statement {
  readonly name: string;
  /** `[local name without @, T-SQL type]`, in positional order. */
  readonly params: readonly (readonly [string, string])[];
  readonly body: (schema: string) => string;
}

const registry = new Map<string, Statement>();

/** Declares a statement (once, at module load). */
export function statement(name: string, params: Readonly<Record<string, string>>, body: (schema: string) => string): Statement {
  if (registry.has(name)) throw new Error(`statement ${name} is declared twice`);
  const declared: Statement = { name, params: Object.freeze(Object.entries(params)), body };
  registry.set(name, declared);
  return declared;
}

/**
 * The two statements of a keyset page over `seq`, `${name}Oldest` and `${name}Newest`: `body`
 * writes each from its comparison with the cursor (`>` oldest first, `<` newest first) and its order.
 */
export function seqPages(
  name: string,
  params: Readonly<Record<string, string>>,
  body: (schema: string, after: ">" | "<", order: "ASC" | "DESC") => string,
): { readonly oldestFirst: Statement; readonly newestFirst: Statement } {
  return { oldestFirst: statement(`${name}Oldest`, params, (S) => body(S, ">", "ASC")), newestFirst: statement(`${name}Newest`, params, (S) => body(S, "<", "DESC")) };
}

/** Every statement declared so far (import the store's modules first). */
export function registeredStatements(): readonly Statement[] {
  return [...registry.values()];
}

/** The prelude of `statement`: its typed locals, each from its positional parameter. */
function prelude(st: Statement, value: (index: number) => string): string {
  if (st.params.length === 0) return "";
  return `DECLARE ${st.params.map(([name, type], i) => `@${name} ${type} = ${value(i)}`).join(", ")};\n`;
}

const texts = new Map<string, string>();

/** The full text of `statement` in `schema`, with positional parameters `@1` … (cached). */
export function render(st: Statement, schema: string): string {
  const cacheKey = `${schema}\u0000${st.name}`;
  let text = texts.get(cacheKey);
  if (text === undefined) {
    text = prelude(st, (i) => `@${i + 1}`) + st.body(schema);
    texts.set(cacheKey, text);
  }
  return text;
}

/** A T-SQL literal for a parameter value (for plan checks, which run the text without parameters). */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "1" : "0";
  if (Buffer.isBuffer(value)) return value.length === 0 ? "0x" : `0x${value.toString("hex")}`;
  if (typeof value === "string") return `N'${value.replaceAll("'", "''")}'`;
  throw new TypeError(`no literal for ${typeof value}`);
}

/** The text of `statement` with its parameters inlined as literals (`SET SHOWPLAN_XML ON` runs no RPC parameters). */
export function renderWithLiterals(st: Statement, schema: string, values: Readonly<Record<string, unknown>>): string {
  return prelude(st, (i) => literal(values[st.params[i]![0]])) + st.body(schema);
}

/** The positional values of `statement`, from values by local name (a missing one is NULL). */
export function positional(st: Statement, values: Readonly<Record<string, unknown>>): unknown[] {
  for (const name of Object.keys(values)) {
    if (!st.params.some(([p]) => p === name)) throw new Error(`statement ${st.name} has no parameter @${name}`);
  }
  return st.params.map(([name]) => values[name] ?? null);
}
