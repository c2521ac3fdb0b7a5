import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client'
import {
  CLIENTS,
  type ClientName,
  startIssuer,
  type TestIssuer,
} from '../../../packages/core/test/oauth-issuer.js'
import {
  freePort,
  type Nginx,
  type RedisServer,
  type Replica,
  startNginx,
  startRedis,
  startReplicas,
} from '../src/harness.js'

// A cluster with OAuth on: core's test issuer (oidc-provider) on loopback, Redis, three replicas
// started with `--auth-issuer` and `--redis-url`, and round-robin nginx in front. The caller stops
// it with `stopAll()` and `issuer.close()`.

export interface OAuthCluster {
  issuer: TestIssuer
  redis: RedisServer
  replicas: Replica[]
  nginx: Nginx
}

export async function startOAuthCluster(): Promise<OAuthCluster> {
  const issuer = await startIssuer()
  const redis = await startRedis()
  // Tokens are issued for the URL clients reach (nginx), so nginx's port is chosen first.
  const port = await freePort()
  const resource = `http://127.0.0.1:${port}/mcp`
  issuer.resource = resource
  const replicas = await startReplicas(3, {
    redisUrl: redis.url,
    // The settings of docs/oauth.md: every request needs mcp:read, writes also mcp:write; opaque
    // tokens are introspected with the server's own client credentials.
    args: [
      '--auth-issuer',
      issuer.url,
      '--auth-resource',
      resource,
      '--auth-scopes',
      'mcp:read',
      '--auth-introspection-url',
      `${issuer.url}/token/introspection`,
    ],
    env: { MCP_AUTH_CLIENT_ID: 'resource-server', MCP_AUTH_CLIENT_SECRET: CLIENTS['resource-server'].secret },
  })
  const nginx = await startNginx(
    replicas.map((replica) => replica.port),
    undefined,
    port,
  )
  return { issuer, redis, replicas, nginx }
}

/** The v2 SDK client with its own client-credentials OAuth support, for `client` at `url`. */
export function oauthClient(
  issuer: TestIssuer,
  url: string,
  client: ClientName,
  capabilities: Record<string, unknown> = {},
  era?: 'modern',
) {
  const provider = new ClientCredentialsProvider({
    clientId: client,
    clientSecret: CLIENTS[client].secret,
    scope: CLIENTS[client].scope,
    expectedIssuer: issuer.url,
  })
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider })
  const mcp = new Client({ name: `oauth-scale-${client}`, version: '1.0.0' }, {
    capabilities,
    ...(era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
  } as never)
  return { mcp, transport }
}
