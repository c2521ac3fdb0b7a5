// The SDK builds its 2025-era wire schemas (about 750 zod schemas: every request, result and
// notification of that protocol revision) in one function, `build$1()`, on the first message of a
// 2025-era connection, and its registry then reads every one of them into its method maps. A server
// needs a handful of them before its first `tools/list` (initialize, initialized, the JSON-RPC
// envelope), so building all of them was the largest single share of a cold start (≈ 15 ms on a
// loaded machine, more than the SDK's eager schema module).
//
// This rewrites that one function of the SDK's server bundle (at build time, in the bin's copy) so
// that each schema is built on its first use, through the same memo: `build$1()` still returns one
// object, built once, whose properties are the same schemas (identity holds for every consumer), but
// each is made when first read, together with the schemas it is made of. The registry's three maps
// read their schemas the same way. The source is checked before it is rewritten: an SDK whose
// functions do not have the expected shape fails the build instead of being half rewritten.
import { createRequire } from 'node:module'

const ts = createRequire(import.meta.url)('typescript')

/** The text of `source` with `edits` ([start, end, text], non-overlapping) applied. */
function splice(source, edits) {
  let out = source
  for (const [start, end, text] of [...edits].sort((a, b) => b[0] - a[0]))
    out = out.slice(0, start) + text + out.slice(end)
  return out
}

function fail(file, message) {
  throw new Error(
    `lazy SDK schemas: ${message} in ${file}; the SDK changed, update tools/bundle/lazy-sdk-schemas.mjs`,
  )
}

/** The leftmost name of a call or property chain (`z` of `z.object({…}).describe(…)`). */
function chainRoot(expression) {
  let node = expression
  while (
    ts.isCallExpression(node) ||
    ts.isPropertyAccessExpression(node) ||
    ts.isElementAccessExpression(node) ||
    ts.isParenthesizedExpression(node) ||
    ts.isNonNullExpression(node)
  )
    node = node.expression
  return ts.isIdentifier(node) ? node.text : undefined
}

/** The name a module imports zod as (`import * as z from "zod/v4"`). */
function zodNamespace(file, sourceFile) {
  for (const statement of sourceFile.statements) {
    const bindings = ts.isImportDeclaration(statement) ? statement.importClause?.namedBindings : undefined
    if (
      bindings &&
      ts.isNamespaceImport(bindings) &&
      ts.isStringLiteral(statement.moduleSpecifier) &&
      /^zod(\/v4)?$/.test(statement.moduleSpecifier.text)
    )
      return bindings.name.text
  }
  fail(file, 'zod is not imported as a namespace')
}

/** The top-level function declaration named `name`. */
function functionNamed(file, sourceFile, name) {
  const found = sourceFile.statements.filter(
    (statement) => ts.isFunctionDeclaration(statement) && statement.name?.text === name,
  )
  if (found.length !== 1) fail(file, `expected one function ${name}, found ${found.length}`)
  return found[0]
}

/**
 * `function <memoFunction>() { return <memo> ??= <build>(); }`: the name of the build function.
 */
function builderOf(file, sourceFile, memoFunction) {
  const body = functionNamed(file, sourceFile, memoFunction).body?.statements ?? []
  const expression = body.length === 1 && ts.isReturnStatement(body[0]) ? body[0].expression : undefined
  if (
    !expression ||
    !ts.isBinaryExpression(expression) ||
    expression.operatorToken.kind !== ts.SyntaxKind.QuestionQuestionEqualsToken ||
    !ts.isCallExpression(expression.right) ||
    !ts.isIdentifier(expression.right.expression) ||
    expression.right.arguments.length !== 0
  )
    fail(file, `${memoFunction} is not a memo of a build function`)
  return expression.right.expression.text
}

/**
 * Rewrites `function build() { const A = …; const B = …A…; return { K: …B…, … } }` so that each
 * local is a memoized thunk (`A()`), and each returned property a memoized getter.
 */
function lazyBuild(file, sourceFile, name) {
  const declaration = functionNamed(file, sourceFile, name)
  const statements = declaration.body?.statements ?? []
  if (declaration.parameters.length !== 0 || statements.length < 2)
    fail(file, `${name} has parameters or no body`)
  const locals = new Map()
  for (const statement of statements.slice(0, -1)) {
    const list = ts.isVariableStatement(statement) ? statement.declarationList : undefined
    if (
      !list ||
      !(list.flags & ts.NodeFlags.Const) ||
      list.declarations.length !== 1 ||
      !ts.isIdentifier(list.declarations[0].name) ||
      !list.declarations[0].initializer
    )
      fail(file, `${name} has a statement other than one const declaration`)
    locals.set(list.declarations[0].name.text, list.declarations[0])
  }
  // Only zod schemas are made lazy: each local is a chain on zod or on an earlier local.
  const zod = zodNamespace(file, sourceFile)
  for (const [local, declaration] of locals) {
    const root = chainRoot(declaration.initializer)
    if (root !== zod && !locals.has(root)) fail(file, `${name} builds ${local} from something other than zod`)
  }
  const last = statements.at(-1)
  if (!ts.isReturnStatement(last) || !last.expression || !ts.isObjectLiteralExpression(last.expression))
    fail(file, `${name} does not end by returning an object literal`)

  // Every identifier naming a local, in the function, is a reference to it unless it is a property
  // name; nothing nested may declare one of those names again (a parameter, a variable).
  const edits = []
  const visit = (node) => {
    if (
      (ts.isParameter(node) || ts.isVariableDeclaration(node) || ts.isFunctionDeclaration(node)) &&
      node.name &&
      ts.isIdentifier(node.name) &&
      locals.has(node.name.text) &&
      locals.get(node.name.text) !== node
    )
      fail(file, `${name} declares ${node.name.text} again`)
    if (ts.isShorthandPropertyAssignment(node) && locals.has(node.name.text)) {
      edits.push([node.getStart(sourceFile), node.end, `${node.name.text}: ${node.name.text}()`])
      return
    }
    if (ts.isIdentifier(node) && locals.has(node.text)) {
      const parent = node.parent
      const isName =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        (ts.isPropertyAssignment(parent) && parent.name === node) ||
        (ts.isMethodDeclaration(parent) && parent.name === node) ||
        (ts.isVariableDeclaration(parent) && parent.name === node)
      if (!isName) edits.push([node.getStart(sourceFile), node.end, `${node.text}()`])
    }
    ts.forEachChild(node, visit)
  }
  ts.forEachChild(declaration.body, visit)

  // const A = E  →  const A = () => (slot ??= E)
  let slot = 0
  const slots = []
  for (const local of locals.values()) {
    const memo = `__keelLazy${slot++}`
    slots.push(memo)
    const start = local.initializer.getStart(sourceFile)
    edits.push([start, start, `() => (${memo} ??= (`], [local.initializer.end, local.initializer.end, '))'])
  }
  // return { K: E }  →  return { get K() { return (slot ??= E) } }
  for (const property of last.expression.properties) {
    if (ts.isShorthandPropertyAssignment(property)) {
      // { A } was rewritten to { A: A() } above: a getter calling the memoized thunk.
      continue
    }
    if (!ts.isPropertyAssignment(property) || ts.isComputedPropertyName(property.name))
      fail(file, `${name} returns something other than plain properties`)
    const memo = `__keelLazy${slot++}`
    slots.push(memo)
    const key = property.name.getText(sourceFile)
    const value = property.initializer
    edits.push(
      [property.getStart(sourceFile), value.getStart(sourceFile), `get ${key}() { return (${memo} ??= (`],
      [value.end, value.end, ')) }'],
    )
  }
  const shorthand = last.expression.properties.filter(ts.isShorthandPropertyAssignment)
  for (const property of shorthand) {
    const local = property.name.text
    // Replace the { A: A() } edit made by visit() with a getter.
    const index = edits.findIndex(([start]) => start === property.getStart(sourceFile))
    edits.splice(index, 1, [
      property.getStart(sourceFile),
      property.end,
      `get ${local}() { return ${local}() }`,
    ])
  }
  const bodyStart = declaration.body.getStart(sourceFile) + 1
  edits.push([bodyStart, bodyStart, `\n\tlet ${slots.join(', ')};`])
  return edits
}

/**
 * `function registryMaps() { if (m) return m; const s = build(); m = { a: { k: s.X, … }, … }; return m }`:
 * the inner maps' entries become getters (`get k() { return s.X }`), so building the maps reads no
 * schema. The maps keep their keys; a schema is the same object whenever it is read.
 */
function lazyMaps(file, sourceFile, name, builderMemo) {
  const declaration = functionNamed(file, sourceFile, name)
  const edits = []
  let maps = 0
  const visit = (node) => {
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
      ts.isObjectLiteralExpression(node.right)
    ) {
      for (const outer of node.right.properties) {
        if (!ts.isPropertyAssignment(outer) || !ts.isObjectLiteralExpression(outer.initializer))
          fail(file, `${name} builds something other than maps of schemas`)
        maps++
        for (const entry of outer.initializer.properties) {
          if (
            !ts.isPropertyAssignment(entry) ||
            ts.isComputedPropertyName(entry.name) ||
            !ts.isPropertyAccessExpression(entry.initializer) ||
            !ts.isIdentifier(entry.initializer.expression)
          )
            fail(file, `${name} has a map entry other than key: s.Schema`)
          edits.push([
            entry.getStart(sourceFile),
            entry.end,
            `get ${entry.name.getText(sourceFile)}() { return ${entry.initializer.getText(sourceFile)} }`,
          ])
        }
      }
      return
    }
    ts.forEachChild(node, visit)
  }
  ts.forEachChild(declaration.body, visit)
  const text = declaration.body.getText(sourceFile)
  if (maps === 0 || !text.includes(`${builderMemo}()`))
    fail(file, `${name} does not build maps from ${builderMemo}()`)
  return edits
}

/** The SDK server bundle's source with its 2025-era schema set and registry made lazy. */
export function lazyEraSchemas(file, source) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const builder = builderOf(file, sourceFile, 'buildSchemas2025')
  const edits = [
    ...lazyBuild(file, sourceFile, builder),
    ...lazyMaps(file, sourceFile, 'registryMaps', 'buildSchemas2025'),
  ]
  return splice(source, edits)
}

/**
 * The SDK's OAuth schemas (about 270 zod schemas in `@modelcontextprotocol/core`'s auth module) are
 * built at start only to be registered in `specTypeSchemas` / `isSpecType`, which no Keel code reads;
 * a server checks OAuth tokens with its own verifier. The auth module is taken out of the eager chain
 * (`internal.mjs` no longer imports or re-exports it) and the server module registers the same
 * names, in the same order, as entries that load it on first read: `specTypeSchemas.OAuthTokens` is
 * the SDK's own schema, the same object at every read, and `isSpecType.OAuthTokens(v)` its
 * `safeParse(v).success`. Anything else in the bin that imported an OAuth schema from `internal.mjs`
 * would fail the build (no such export), so nothing can read one before it is built.
 */
export function authImportOf(file, source) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const imports = sourceFile.statements.filter(
    (statement) =>
      ts.isImportDeclaration(statement) &&
      ts.isStringLiteral(statement.moduleSpecifier) &&
      /^\.\/auth-[\w-]+\.mjs$/.test(statement.moduleSpecifier.text),
  )
  if (imports.length !== 1) fail(file, `expected one import of the auth module, found ${imports.length}`)
  const [declaration] = imports
  const bindings = declaration.importClause?.namedBindings
  if (!bindings || !ts.isNamedImports(bindings) || declaration.importClause.name)
    fail(file, 'the auth module is not imported by name')
  /** local name → the auth module's export name */
  const names = new Map(
    bindings.elements.map((element) => [element.name.text, (element.propertyName ?? element.name).text]),
  )
  const exports = sourceFile.statements.filter(
    (statement) => ts.isExportDeclaration(statement) && !statement.moduleSpecifier,
  )
  if (exports.length !== 1 || !exports[0].exportClause || !ts.isNamedExports(exports[0].exportClause))
    fail(file, 'expected one export list')
  const edits = [[declaration.getStart(sourceFile), declaration.end, '']]
  const elements = exports[0].exportClause.elements
  const kept = elements.filter((element) => !names.has((element.propertyName ?? element.name).text))
  if (kept.length !== elements.length - names.size)
    fail(file, 'the auth names are not all re-exported as they are')
  edits.push([
    exports[0].exportClause.getStart(sourceFile),
    exports[0].exportClause.end,
    `{ ${kept.map((element) => element.getText(sourceFile)).join(', ')} }`,
  ])
  return {
    path: declaration.moduleSpecifier.text,
    names,
    /** internal.mjs without the auth module. */
    internal: splice(source, edits),
  }
}

/**
 * The server module's registration of the OAuth schemas made lazy: `const authSchemas = { A, … }`
 * and `for (const [key, schema] of Object.entries(authSchemas)) register(key, schema)` become the
 * same registrations through getters that `require()` the auth module (`authPath`, absolute) on the
 * first read. `names` maps the schema names to the auth module's export names.
 */
function lazyAuthRegistration(file, sourceFile, authPath, names) {
  const edits = []
  const statements = sourceFile.statements
  const objectStatement = statements.find(
    (statement) =>
      ts.isVariableStatement(statement) &&
      statement.declarationList.declarations.length === 1 &&
      ts.isIdentifier(statement.declarationList.declarations[0].name) &&
      statement.declarationList.declarations[0].name.text === 'authSchemas',
  )
  const object = objectStatement?.declarationList.declarations[0].initializer
  if (
    !object ||
    !ts.isObjectLiteralExpression(object) ||
    !object.properties.every(ts.isShorthandPropertyAssignment)
  )
    fail(file, 'authSchemas is not an object of schema names')
  const keys = object.properties.map((property) => property.name.text)
  for (const key of keys) if (!names.has(key)) fail(file, `${key} is not imported from the auth module`)
  const loops = statements.filter(
    (statement) =>
      ts.isForOfStatement(statement) &&
      /^Object\.entries\(authSchemas\)$/.test(statement.expression.getText(sourceFile)),
  )
  if (loops.length !== 1 || !/^register\(key, schema\);?$/.test(loops[0].statement.getText(sourceFile)))
    fail(file, 'the OAuth schemas are not registered by one register() loop')
  const register = functionNamed(file, sourceFile, 'register')
  const registerText = register.getText(sourceFile).replace(/\s+/g, ' ')
  if (
    !registerText.includes('const name = key.slice(0, -6);') ||
    !registerText.includes('_specTypeSchemas[name] = schema;') ||
    !registerText.includes('_isSpecType[name] = (v) => schema.safeParse(v).success;')
  )
    fail(file, 'register() does not have the expected shape')
  // The schema names leave the server module's import of internal.mjs; they must be used nowhere
  // else in it.
  const used = new Map(keys.map((key) => [key, 0]))
  const count = (node) => {
    if (ts.isIdentifier(node) && used.has(node.text)) used.set(node.text, used.get(node.text) + 1)
    ts.forEachChild(node, count)
  }
  for (const statement of statements) if (!ts.isImportDeclaration(statement)) count(statement)
  for (const [key, uses] of used) if (uses !== 1) fail(file, `${key} is used outside authSchemas`)
  const internalImport = statements.find(
    (statement) =>
      ts.isImportDeclaration(statement) &&
      ts.isStringLiteral(statement.moduleSpecifier) &&
      statement.moduleSpecifier.text === '@modelcontextprotocol/core/internal',
  )
  const bindings = internalImport?.importClause?.namedBindings
  if (!bindings || !ts.isNamedImports(bindings))
    fail(file, 'no named import of @modelcontextprotocol/core/internal')
  const kept = bindings.elements.filter((element) => !used.has(element.name.text))
  if (kept.length !== bindings.elements.length - keys.length)
    fail(file, 'the OAuth schemas are not all imported from @modelcontextprotocol/core/internal')
  edits.push([
    bindings.getStart(sourceFile),
    bindings.end,
    `{ ${kept.map((element) => element.getText(sourceFile)).join(', ')} }`,
  ])
  const exportNames = Object.fromEntries(keys.map((key) => [key, names.get(key)]))
  edits.push([
    objectStatement.getStart(sourceFile),
    objectStatement.end,
    `let __keelAuth;
const __keelAuthSchema = (key) => (__keelAuth ??= require(${JSON.stringify(authPath)}))[${JSON.stringify(exportNames)}[key]];
const authSchemas = ${JSON.stringify(keys)};`,
  ])
  edits.push([
    loops[0].getStart(sourceFile),
    loops[0].end,
    `for (const key of authSchemas) {
	const name = key.slice(0, -6);
	Object.defineProperty(_specTypeSchemas, name, { get: () => __keelAuthSchema(key), enumerable: true, configurable: true });
	_isSpecType[name] = (v) => __keelAuthSchema(key).safeParse(v).success;
}`,
  ])
  return edits
}

/** The SDK server bundle's source with the OAuth schemas registered lazily (see authImportOf). */
export function lazyAuthSchemas(file, source, authPath, names) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  return splice(source, lazyAuthRegistration(file, sourceFile, authPath, names))
}

// ---------------------------------------------------------------------------------------------
// The SDK's protocol schemas module (`@modelcontextprotocol/core/dist/schemas-*.mjs`, about 800
// zod schemas) evaluates every schema when the bin starts, and the server module then registers
// each in specTypeSchemas. In the bin's copy each schema becomes a memoized thunk built on first
// use: the module, `internal.mjs` (which re-exports it) and the server module (its one consumer
// in a server bin) are rewritten together, and the thunks are exported only under names of their
// own (`<name>__keelLazy`), so that any other module importing a schema by its usual name fails
// the build instead of receiving a thunk (the bundler then builds that bin without this part).

const LAZY = '__keelLazy'

/** Identifiers that name a declaration or a property, not a reference to a binding. */
function isNotReference(node) {
  const parent = node.parent
  return (
    ((ts.isPropertyAccessExpression(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isMethodDeclaration(parent) ||
      ts.isPropertyDeclaration(parent) ||
      ts.isGetAccessorDeclaration(parent) ||
      ts.isSetAccessorDeclaration(parent) ||
      ts.isVariableDeclaration(parent) ||
      ts.isLabeledStatement(parent) ||
      ts.isBreakOrContinueStatement(parent)) &&
      parent.name === node) ||
    (ts.isLabeledStatement(parent) && parent.label === node) ||
    (ts.isBreakOrContinueStatement(parent) && parent.label === node)
  )
}

/**
 * Edits that turn every reference to one of `names` under `root` into a call (`X` → `X()`,
 * `{ X }` → `{ X: X() }`). Imports and exports are left to the caller; a declaration of one of the
 * names other than `allowed` (a shadowing parameter, variable or function) fails the build.
 */
function referenceEdits(file, sourceFile, statements, names, allowed) {
  const edits = []
  const visit = (node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return
    if (
      (ts.isParameter(node) ||
        ts.isVariableDeclaration(node) ||
        ts.isFunctionDeclaration(node) ||
        ts.isFunctionExpression(node) ||
        ts.isClassDeclaration(node) ||
        ts.isClassExpression(node) ||
        ts.isBindingElement(node)) &&
      node.name &&
      ts.isIdentifier(node.name) &&
      names.has(node.name.text) &&
      !allowed.has(node)
    )
      fail(file, `${node.name.text} is declared again`)
    if (ts.isShorthandPropertyAssignment(node) && names.has(node.name.text)) {
      edits.push([node.getStart(sourceFile), node.end, `${node.name.text}: ${node.name.text}()`])
      return
    }
    if (ts.isIdentifier(node) && names.has(node.text) && !isNotReference(node))
      edits.push([node.getStart(sourceFile), node.end, `${node.text}()`])
    ts.forEachChild(node, visit)
  }
  for (const statement of statements) visit(statement)
  return edits
}

/** The single `export { … }` list (no `from`) of a module. */
function exportList(file, sourceFile) {
  const lists = sourceFile.statements.filter(
    (statement) =>
      ts.isExportDeclaration(statement) &&
      !statement.moduleSpecifier &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause),
  )
  if (lists.length !== 1) fail(file, `expected one export list, found ${lists.length}`)
  return lists[0]
}

/**
 * Edits that make each of `declarations` (top-level `const`s) a memoized thunk: its initializer
 * runs on the first call, every call returns that value. The memos (`<prefix>0`, …) are declared
 * before `before` (the first of them unless given). Push them after any edit of the references inside the initializers:
 * where a reference is replaced at an initializer's start, that replacement must be applied before
 * the thunk's opening is inserted (splice keeps the order of ties).
 */
function memoizedThunkEdits(sourceFile, declarations, prefix, before = declarations[0]) {
  const memos = declarations.map((_, index) => `${prefix}${index}`)
  const edits = []
  for (const [index, { initializer }] of declarations.entries()) {
    const start = initializer.getStart(sourceFile)
    edits.push([start, start, `() => (${memos[index]} ??= (`], [initializer.end, initializer.end, '))'])
  }
  const first = before.parent.parent.getStart(sourceFile)
  edits.push([first, first, `let ${memos.join(', ')};\n`])
  return edits
}

/**
 * The protocol schemas module with each schema a memoized thunk. Returns its new text and the
 * module's export names that are now thunks (exported as `<name>__keelLazy`).
 */
export function lazySchemasModule(file, source, { minimum = 100 } = {}) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const declarations = []
  for (const statement of sourceFile.statements) {
    if (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) continue
    const list = ts.isVariableStatement(statement) ? statement.declarationList : undefined
    if (!list || !(list.flags & ts.NodeFlags.Const) || list.declarations.length !== 1)
      fail(file, 'the schemas module has a statement other than one const declaration')
    const [declaration] = list.declarations
    if (!ts.isIdentifier(declaration.name) || !declaration.initializer)
      fail(file, 'the schemas module has a const that is not a plain name')
    declarations.push(declaration)
  }
  // A schema: a chain on zod or on another schema (`z.object(…)`, `A.extend(…)`), or another
  // schema's name (an alias). Anything else (constants, a call of something else) stays as it is.
  const zod = zodNamespace(file, sourceFile)
  const thunks = new Set()
  const allowed = new Set()
  for (const declaration of declarations) {
    const { initializer } = declaration
    const root = chainRoot(initializer)
    const chain = !ts.isIdentifier(initializer) && (root === zod || thunks.has(root))
    const alias = ts.isIdentifier(initializer) && thunks.has(initializer.text)
    if (chain || alias) {
      thunks.add(declaration.name.text)
      allowed.add(declaration)
    }
  }
  if (thunks.size < minimum) fail(file, `only ${thunks.size} schemas found`)
  const edits = referenceEdits(file, sourceFile, sourceFile.statements, thunks, allowed)
  edits.push(
    ...memoizedThunkEdits(
      sourceFile,
      declarations.filter((declaration) => thunks.has(declaration.name.text)),
      `${LAZY}Schema`,
      declarations[0],
    ),
  )
  const lazyExports = new Set()
  const list = exportList(file, sourceFile)
  for (const element of list.exportClause.elements) {
    const local = (element.propertyName ?? element.name).text
    if (!thunks.has(local)) continue
    lazyExports.add(element.name.text)
    edits.push([element.getStart(sourceFile), element.end, `${local} as ${element.name.text}${LAZY}`])
  }
  return { contents: splice(source, edits), lazyExports }
}

/**
 * `internal.mjs` without the OAuth module (when `deferAuth`) and with the protocol schemas it
 * re-exports passed on as thunks under their `__keelLazy` names (when `schemas` is given: the
 * schemas module's path relative to internal.mjs and its thunk exports). Returns the new text, the
 * auth module's path and names, and the re-exported names that are now thunks.
 */
export function lazyInternal(file, source, { deferAuth, schemas }) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const { path: authPath, names: authNames } = authImportOf(file, source)
  const edits = []
  const removed = new Set()
  /** internal.mjs's local name → its export is a thunk */
  const lazyLocals = new Set()
  for (const statement of sourceFile.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue
    const from = statement.moduleSpecifier.text
    if (deferAuth && from === authPath) {
      edits.push([statement.getStart(sourceFile), statement.end, ''])
      for (const name of authNames.keys()) removed.add(name)
    }
    if (schemas && from === schemas.path) {
      const bindings = statement.importClause?.namedBindings
      if (!bindings || !ts.isNamedImports(bindings)) fail(file, 'the schemas module is not imported by name')
      for (const element of bindings.elements) {
        const imported = (element.propertyName ?? element.name).text
        if (!schemas.lazyExports.has(imported)) continue
        lazyLocals.add(element.name.text)
        edits.push([element.getStart(sourceFile), element.end, `${imported}${LAZY} as ${element.name.text}`])
      }
      if (lazyLocals.size === 0) fail(file, 'no schema is imported from the schemas module')
    }
  }
  const list = exportList(file, sourceFile)
  const lazyNames = new Set()
  const kept = []
  for (const element of list.exportClause.elements) {
    const local = (element.propertyName ?? element.name).text
    if (removed.has(local)) continue
    if (lazyLocals.has(local)) {
      lazyNames.add(element.name.text)
      kept.push(`${local} as ${element.name.text}${LAZY}`)
    } else kept.push(element.getText(sourceFile))
  }
  edits.push([list.exportClause.getStart(sourceFile), list.exportClause.end, `{ ${kept.join(', ')} }`])
  // Nothing else in internal.mjs may use a schema (it only re-exports).
  for (const statement of sourceFile.statements)
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement))
      fail(file, 'internal.mjs does more than re-export')
  return { contents: splice(source, edits), authPath, authNames, lazyNames }
}

/** Whether `node` reads a name `read` accepts when it is evaluated (not in a function it defines). */
function readsAtEvaluation(node, read) {
  if (ts.isFunctionLike(node) || ts.isClassLike(node)) return false
  if (ts.isIdentifier(node) && read(node.text) && !isNotReference(node)) return true
  return ts.forEachChild(node, (child) => readsAtEvaluation(child, read) || undefined) === true
}

/**
 * Edits that make each top-level constant of the module computed from a protocol schema when the
 * module is evaluated (the elicitation key sets: `new Set(Object.keys(X.shape…))`) a memoized thunk,
 * computed on first use, and every reference to it a call; so are constants computed from those.
 * Without this, evaluating the module builds the schemas they read. Such a constant that the
 * module exports fails the build.
 */
function lazyDerivedConstants(file, sourceFile, schemas) {
  const derived = new Set()
  const declarations = []
  const fromSchema = (name) => schemas.has(name) || derived.has(name)
  for (const statement of sourceFile.statements) {
    if (!ts.isVariableStatement(statement)) continue
    const list = statement.declarationList
    if (!(list.flags & ts.NodeFlags.Const) || list.declarations.length !== 1) continue
    const [declaration] = list.declarations
    if (!ts.isIdentifier(declaration.name) || !declaration.initializer) continue
    const { initializer } = declaration
    if (!readsAtEvaluation(initializer, fromSchema)) continue
    derived.add(declaration.name.text)
    declarations.push(declaration)
  }
  if (derived.size === 0) return []
  const list = exportList(file, sourceFile)
  for (const element of list.exportClause.elements)
    if (derived.has((element.propertyName ?? element.name).text))
      fail(file, `${element.name.text}, computed from a schema, is exported`)
  return [
    ...referenceEdits(file, sourceFile, sourceFile.statements, derived, new Set(declarations)),
    ...memoizedThunkEdits(sourceFile, declarations, `${LAZY}Derived`),
  ]
}

/**
 * The server module's use of the protocol schemas as thunks: its import of `lazyNames` from
 * internal.mjs takes the `__keelLazy` exports, every reference calls the thunk, a schema the module
 * exports in turn is built when the module is evaluated (`export { X as y }` exports it built), and
 * the spec-type registry reads each schema on first use.
 */
export function lazyServerSchemaImports(file, source, lazyNames) {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const edits = []
  const locals = new Set()
  const imports = sourceFile.statements.filter(
    (statement) =>
      ts.isImportDeclaration(statement) &&
      ts.isStringLiteral(statement.moduleSpecifier) &&
      statement.moduleSpecifier.text === '@modelcontextprotocol/core/internal',
  )
  if (imports.length !== 1) fail(file, 'expected one import of @modelcontextprotocol/core/internal')
  const bindings = imports[0].importClause?.namedBindings
  if (!bindings || !ts.isNamedImports(bindings)) fail(file, 'internal.mjs is not imported by name')
  for (const element of bindings.elements) {
    const imported = (element.propertyName ?? element.name).text
    if (!lazyNames.has(imported)) continue
    locals.add(element.name.text)
    edits.push([element.getStart(sourceFile), element.end, `${imported}${LAZY} as ${element.name.text}`])
  }
  if (locals.size === 0) fail(file, 'no protocol schema is imported')
  edits.push(...referenceEdits(file, sourceFile, sourceFile.statements, locals, new Set()))
  edits.push(...lazyDerivedConstants(file, sourceFile, locals))
  // export { X as y } of a schema: exported built, as the SDK exports it.
  const list = exportList(file, sourceFile)
  const eager = []
  for (const element of list.exportClause.elements) {
    const local = (element.propertyName ?? element.name).text
    if (!locals.has(local)) continue
    eager.push(`const ${LAZY}Built_${local} = ${local}();`)
    edits.push([element.getStart(sourceFile), element.end, `${LAZY}Built_${local} as ${element.name.text}`])
  }
  if (eager.length > 0)
    edits.push([list.getStart(sourceFile), list.getStart(sourceFile), `${eager.join('\n')}\n`])
  // for (const key of SPEC_SCHEMA_KEYS) register(key, schemas_exports[key]): entries read on use.
  const loops = sourceFile.statements.filter(
    (statement) =>
      ts.isForOfStatement(statement) && statement.expression.getText(sourceFile) === 'SPEC_SCHEMA_KEYS',
  )
  const loopBody = loops[0]?.statement.getText(sourceFile)
  const namespace = /^register\(key, (\w+)\[key\]\);?$/.exec(loopBody ?? '')?.[1]
  if (loops.length !== 1 || !namespace)
    fail(file, 'the spec schemas are not registered by one register() loop')
  edits.push([
    loops[0].getStart(sourceFile),
    loops[0].end,
    `for (const key of SPEC_SCHEMA_KEYS) {
	const name = key.slice(0, -6);
	Object.defineProperty(_specTypeSchemas, name, { get: () => ${namespace}[key], enumerable: true, configurable: true });
	_isSpecType[name] = (v) => ${namespace}[key].safeParse(v).success;
}`,
  ])
  return splice(source, edits)
}
