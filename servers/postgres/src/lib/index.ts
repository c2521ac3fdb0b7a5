/**
 * The postgres server's domain library: no MCP imports, nothing loaded or connected at import
 * time. See README.md in this folder for the API and its guarantees.
 */
export {
  type CallOptions,
  type ColumnInfo,
  type ConstraintInfo,
  Database,
  type DatabaseOptions,
  type ExplainResult,
  type ForeignKeyInfo,
  type HealthInfo,
  type IncomingForeignKeyInfo,
  type IndexInfo,
  type ListTablesOptions,
  type QueryLimits,
  type QueryOptions,
  type QueryResult,
  quoteIdentifier,
  type ReferentialAction,
  type SchemaInfo,
  type SslOptions,
  type TableDescription,
  type TableKind,
  type TablePage,
  type TableSummary,
  tlsOptions,
  toLikePattern,
} from './database.js'
export {
  type ClassifiedError,
  classifyPgError,
  DatabaseConfigError,
  type ErrorKind,
  type ErrorReason,
  isConnectionError,
  QueryCancelledError,
  QueryTimeoutError,
  ResultTooLargeError,
  redactConnectionString,
  SqlRefusedError,
} from './errors.js'
export { ExtensionMissingError, type ExtensionName, findExtension } from './extensions.js'
export {
  csvField,
  formatCsv,
  formatTable,
  type JsonValue,
  type JsonValueOptions,
  pointAt,
  type RenderableResult,
  type RenderedResult,
  type RenderOptions,
  type ResultField,
  rowsToObjects,
  toJsonValue,
  uniqueNames,
} from './format.js'
export {
  assertReferencesAllowed,
  monitoringAllowKeys,
  monitoringAllowList,
  volatileAllowList,
} from './function-policy.js'
export {
  type HealthCheck,
  type HealthFinding,
  type HealthReport,
  healthChecks,
  healthReport,
} from './health.js'
export {
  explainWithHypotheticalIndexes,
  type HypotheticalExplain,
  maxHypotheticalIndexes,
  parseIndexDefinition,
} from './hypothetical.js'
export {
  type AdviceSource,
  type IndexAdvice,
  type IndexRecommendation,
  recommendIndexes,
} from './index-advisor.js'
export {
  describeObject,
  listObjects,
  type ObjectDescription,
  type ObjectKind,
  type ObjectSummary,
  objectKinds,
} from './objects.js'
export { type PlanSummary, summarizePlan } from './plan.js'
export {
  type AcceptedStatement,
  checkReadOnlySql,
  collectSqlReferences,
  deniedFunctionReason,
  loadSqlParser,
  type SqlAccepted,
  type SqlGuardResult,
  type SqlReferences,
  type SqlRefusal,
  type SqlRefusalCode,
} from './sql-guard.js'
export { type TopQuery, type TopQueryOrder, topQueries } from './workload.js'
