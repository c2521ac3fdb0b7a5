import { execFileSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A throwaway self-signed certificate for 127.0.0.1, made with openssl. */
export interface SelfSignedCertificate {
  key: Buffer
  cert: Buffer
  /** The certificate's file (PEM), what NODE_EXTRA_CA_CERTS or OTEL_EXPORTER_OTLP_CERTIFICATE take. */
  certFile: string
  /** Removes its files. */
  close(): Promise<void>
}

/**
 * Makes a self-signed certificate valid for a day for `127.0.0.1` (and `localhost`), for an https
 * server on loopback that a client is told to trust. Needs the `openssl` command.
 */
export async function selfSignedCertificate(): Promise<SelfSignedCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-tls-'))
  const [keyFile, certFile] = [join(dir, 'key.pem'), join(dir, 'cert.pem')]
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile],
      ],
      { stdio: 'ignore' },
    )
    return {
      key: await readFile(keyFile),
      cert: await readFile(certFile),
      certFile,
      close: () => rm(dir, { recursive: true, force: true }),
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }
}
