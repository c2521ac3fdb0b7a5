/**
 * `@keel-mcp/core/testing`: real SDK clients (v2 and v1) connected to a server in memory, over a
 * spawned stdio process, or over HTTP; the Python MCP SDK's client (a venv made once) driving a
 * built bin; raw wire access for protocol tests; a recorder of the modules a spawned server loads; a
 * loopback OTLP receiver for what a server exports; a self-signed certificate for an https
 * server on loopback; a reader of a server's audit lines; and the contract check every server's
 * tool list must pass (with the arguments its audit log records).
 *
 * @packageDocumentation
 */

export { readAuditLines } from './audit.js'
export {
  type ClientOptions,
  type Connection,
  connectHttp,
  connectInMemory,
  connectStdio,
  type HttpOptions,
  type InMemoryOptions,
  type StdioOptions,
  type TestClient,
} from './clients.js'
export { CONTENT_ARGUMENTS, checkToolContract, TOOL_NAME_PATTERN, toolListSnapshot } from './contract.js'
export { type ModuleLoadRecorder, recordModuleLoads } from './module-loads.js'
export {
  type OtlpReceiver,
  type OtlpValue,
  type ReceivedHistogramPoint,
  type ReceivedSpan,
  startOtlpReceiver,
} from './otlp-receiver.js'
export {
  PYTHON_MCP_VERSION,
  type PythonMcp,
  type PythonPlan,
  type PythonRun,
  type PythonStep,
  type PythonStepResult,
  type PythonTarget,
  pythonMcp,
  runPythonClient,
  runPythonScript,
} from './python.js'
export { type SelfSignedCertificate, selfSignedCertificate } from './tls.js'
export {
  initializeRequest,
  listToolsAndExit,
  type RawStdio,
  runProcess,
  type SpawnedHttpServer,
  spawnHttp,
  spawnRaw,
} from './wire.js'
