/**
 * `@keel-mcp/core`: everything a Keel MCP server shares — tool, resource and prompt
 * definitions, the command line, stdio and Streamable HTTP transports, error mapping, logging,
 * limits and a clean lifecycle. Servers are data plus domain code on top of it.
 *
 * @packageDocumentation
 */
export { z } from 'zod'
export {
  answerCap,
  Budget,
  type BudgetCut,
  type BudgetStart,
  boundBytes,
  boundTokens,
  budgetOutput,
  budgetShape,
  bytesFor,
  charsFor,
  DEFAULT_MAX_ANSWER_TOKENS,
  estimateTokens,
  type ItemsCut,
  isBudgetCursor,
  maxTokensArgument,
  type OpenBudgetOptions,
  openBudget,
  type TextCut,
  withMarker,
} from './budget.js'
export {
  createInstance,
  describeIssues,
  RESULT_TEXT_CEILING_BYTES,
  type Runtime,
  selectTools,
} from './build-server.js'
export {
  type CommonConfig,
  type CommonFlagName,
  ConfigError,
  helpText,
  isLoopback,
  type OptionSpec,
  type OptionSpecs,
  type ParsedConfig,
  type PositionalSpec,
  parseConfig,
} from './config.js'
export { cancelDeadline, type Expiring, setDeadline } from './deadline.js'
export {
  type AnyTool,
  type AskOptions,
  type ClientAccess,
  type ClientRoot,
  type ContentBlock,
  type DepsContext,
  defineServer,
  defineTool,
  type HandleBinding,
  type HandleKindSpec,
  type HandlerContext,
  type HiddenTools,
  type Icon,
  type Infer,
  type ListedResource,
  type PromptMessage,
  type PromptSpec,
  type RequestAuth,
  type ResourceContents,
  type ResourceSpec,
  type ResourceTemplateSpec,
  type ServerSpec,
  type SessionAccess,
  type Shape,
  shapeOf,
  svgIcon,
  type ToolAnnotations,
  type ToolContext,
  type ToolHandleUse,
  type ToolOutput,
  type ToolSpec,
  toolFactory,
  type Unsubscribe,
} from './define.js'
export {
  type ErrorMapper,
  errorReference,
  formatToolError,
  isAbortError,
  mapSystemError,
  TOOL_ERROR_KINDS,
  ToolError,
  type ToolErrorKind,
  type ToolErrorOptions,
} from './errors.js'
export { handleArgument } from './handles.js'
export type { HttpEndpoint } from './http.js'
export {
  agentOptions,
  arrayBufferOf,
  connectionNeverMade,
  createHttpFetch,
  type FetchInit,
  FetchResponse,
  type HttpFetch,
  type HttpFetchOptions,
  httpFetch,
  type ReadTest,
  ResponseBody,
  ResponseHeaders,
  textOf,
} from './http-fetch.js'
export { nodeCrypto } from './lazy-crypto.js'
export {
  type CappedText,
  capText,
  decodeCursor,
  encodeCursor,
  paginate,
  truncateUtf8,
  withTimeout,
} from './limits.js'
export {
  createLogger,
  LOG_LEVELS,
  Logger,
  type LoggerOptions,
  type LogLevel,
  type LogRecord,
} from './logger.js'
export { traceUpstream } from './observe/hooks.js'
export type { ObserveConfig, Rate } from './observe-config.js'
export { Redactor, redactor } from './redact.js'
export { prepare, type RunningServer, type RunOptions, run, serveHttp } from './run.js'
export { LineTransport, type LineTransportOptions } from './stdio.js'
