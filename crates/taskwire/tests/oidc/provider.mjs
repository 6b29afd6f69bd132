// An OpenID provider for the OAuth interop tests (crates/taskwire/tests/oauth.rs):
// the npm package oidc-provider, on loopback, issuing JWT access tokens (RFC
// 9068, ES256) by the client credentials grant for the resource indicator a
// client asks for (RFC 8707).
//
// Environment: OIDC_PROVIDER_DIR (where oidc-provider is installed), PORT (0: any free port), RESOURCE (the default resource,
// taskwire's public URL). Each start makes a new signing key with a new key id:
// restarting on the same port is the tests' key rotation.
//
// Prints one JSON line on stdout once listening: {"issuer", "kid",
// "privateKeyPem"} (the test key, for the tests that sign tokens with the
// issuer's own key but a wrong claim).
//
// Clients (client_secret_basic or client_secret_post):
//   svc/svc-secret         tasks:read tasks:write, 300 s tokens
//   reader/reader-secret   tasks:read only
//   short/short-secret     tasks:read tasks:write, 2 s tokens
import { createServer } from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

// The install of .ci/setup-oidc-provider.sh (OIDC_PROVIDER_DIR).
const dir = process.env.OIDC_PROVIDER_DIR;
const { default: Provider } = await import(
  pathToFileURL(`${dir}/node_modules/oidc-provider/lib/index.js`).href
);

const RESOURCE = process.env.RESOURCE;
const port = Number(process.env.PORT || 0);
const SCOPES = 'tasks:read tasks:write';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const kid = randomUUID();
const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope,
  token_endpoint_auth_method: 'client_secret_basic',
  id_token_signed_response_alg: 'ES256',
});
const clients = [client('svc', SCOPES), client('reader', 'tasks:read'), client('short', SCOPES)];
// The same clients with client_secret_post.
for (const c of [...clients]) {
  clients.push({ ...c, client_id: `${c.client_id}-post`, client_secret: c.client_secret, token_endpoint_auth_method: 'client_secret_post' });
}

const server = createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys: [jwk] },
    scopes: ['openid', 'tasks:read', 'tasks:write'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator, c) => ({
          scope: SCOPES,
          audience: resourceIndicator,
          accessTokenTTL: c.clientId.startsWith('short') ? 2 : 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  const privateKeyPem = privateKey.export({ format: 'pem', type: 'pkcs8' });
  process.stdout.write(JSON.stringify({ issuer, kid, privateKeyPem }) + '\n');
});
