import type { CommonConfig } from './types.js'

// The common flags every Keel server understands, with the same meaning everywhere: their names,
// env vars and help lines, and the config key each fills. Validation is in settings.ts.

export interface CommonFlag {
  flag: string
  type: 'string' | 'boolean'
  env?: string[]
  multiple?: boolean
  placeholder?: string
  description: string
  secret?: boolean
}

export const COMMON_FLAGS: CommonFlag[] = [
  {
    flag: 'transport',
    type: 'string',
    env: ['MCP_TRANSPORT'],
    placeholder: 'stdio|http',
    description: 'Transport (default stdio).',
  },
  {
    flag: 'host',
    type: 'string',
    env: ['MCP_HOST'],
    placeholder: 'addr',
    description: 'HTTP bind address (default 127.0.0.1).',
  },
  {
    flag: 'port',
    type: 'string',
    env: ['MCP_PORT', 'PORT'],
    placeholder: 'n',
    description: 'HTTP port (default 3000; 0 picks a free port).',
  },
  {
    flag: 'auth-token',
    type: 'string',
    env: ['MCP_AUTH_TOKEN'],
    placeholder: 'token',
    secret: true,
    description: 'Require this bearer token on HTTP (prefer the MCP_AUTH_TOKEN env var).',
  },
  {
    flag: 'stateless',
    type: 'boolean',
    env: ['MCP_STATELESS'],
    description: 'HTTP without sessions (for replicas).',
  },
  {
    flag: 'allowed-hosts',
    type: 'string',
    multiple: true,
    env: ['MCP_ALLOWED_HOSTS'],
    placeholder: 'a,b',
    description: 'Extra Host names accepted on HTTP.',
  },
  {
    flag: 'allowed-origins',
    type: 'string',
    multiple: true,
    env: ['MCP_ALLOWED_ORIGINS'],
    placeholder: 'a,b',
    description: 'Extra Origins accepted on HTTP.',
  },
  {
    flag: 'max-body',
    type: 'string',
    env: ['MCP_MAX_BODY_BYTES'],
    placeholder: 'bytes',
    description: 'Largest HTTP request body (default 4 MiB).',
  },
  {
    flag: 'session-idle-ms',
    type: 'string',
    env: ['MCP_SESSION_IDLE_MS'],
    placeholder: 'ms',
    description: 'Close an HTTP session unused this long (default 600000, 10 min).',
  },
  {
    flag: 'state-secret',
    type: 'string',
    env: ['MCP_STATE_SECRET'],
    placeholder: 'secret',
    secret: true,
    description: 'Key (32+ chars) signing multi-round call state; the same on every replica.',
  },
  {
    flag: 'state-secret-file',
    type: 'string',
    env: ['MCP_STATE_SECRET_FILE'],
    placeholder: 'path',
    description: 'Read the state secret from this file.',
  },
  {
    flag: 'redis-url',
    type: 'string',
    env: ['REDIS_URL'],
    placeholder: 'url',
    secret: true,
    description: 'Keep HTTP sessions and events in Redis so any replica serves any request.',
  },
  { flag: 'read-only', type: 'boolean', env: ['MCP_READ_ONLY'], description: 'Expose only read-only tools.' },
  {
    flag: 'toolsets',
    type: 'string',
    multiple: true,
    env: ['MCP_TOOLSETS'],
    placeholder: 'all|a,b',
    description: 'Enable these toolsets.',
  },
  {
    flag: 'tools',
    type: 'string',
    multiple: true,
    env: ['MCP_TOOLS'],
    placeholder: 'a,b',
    description: 'Expose only these tools.',
  },
  {
    flag: 'exclude-tools',
    type: 'string',
    multiple: true,
    env: ['MCP_EXCLUDE_TOOLS'],
    placeholder: 'a,b',
    description: 'Hide these tools.',
  },
  {
    flag: 'tool-timeout',
    type: 'string',
    env: ['MCP_TOOL_TIMEOUT_MS'],
    placeholder: 'ms',
    description: 'Default per-call time limit (default 60000).',
  },
  {
    flag: 'log-level',
    type: 'string',
    env: ['LOG_LEVEL'],
    placeholder: 'level',
    description: 'debug|info|warn|error|silent (default info). LOG_FORMAT=json for JSON lines.',
  },
  { flag: 'help', type: 'boolean', description: 'Show this help.' },
  { flag: 'version', type: 'boolean', description: 'Print the version.' },
]

/** The common settings once validated: the config's fields, with the raw log level and the secret file. */
export type CommonData = Omit<CommonConfig, 'auth' | 'logLevel'> & {
  stateSecretFile: string | undefined
  logLevel: string | undefined
}

const COMMON_KEYS = {
  transport: 'transport',
  host: 'host',
  port: 'port',
  'auth-token': 'authToken',
  stateless: 'stateless',
  'allowed-hosts': 'allowedHosts',
  'allowed-origins': 'allowedOrigins',
  'max-body': 'maxBodyBytes',
  'session-idle-ms': 'sessionIdleMs',
  'state-secret': 'stateSecret',
  'state-secret-file': 'stateSecretFile',
  'redis-url': 'redisUrl',
  'read-only': 'readOnly',
  toolsets: 'toolsets',
  tools: 'tools',
  'exclude-tools': 'excludeTools',
  'tool-timeout': 'toolTimeoutMs',
  'log-level': 'logLevel',
} as const satisfies Record<string, keyof CommonData>

/** The name of a common flag as core defines it. */
export type CommonFlagName = keyof typeof COMMON_KEYS

/** The common flags as `source` names them, each with the setting it fills. */
export function commonFlagsOf(source: { renameFlags?: Partial<Record<CommonFlagName, string>> }) {
  const renames: Partial<Record<string, string>> = source.renameFlags ?? {}
  return COMMON_FLAGS.map((flag) => ({
    ...flag,
    key: COMMON_KEYS[flag.flag as CommonFlagName] as keyof CommonData | undefined,
    flag: renames[flag.flag] ?? flag.flag,
  }))
}
