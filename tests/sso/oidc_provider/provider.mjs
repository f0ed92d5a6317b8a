// A real OpenID provider for the SSO tests (panva/oidc-provider, certified), run offline on loopback.
// Its people live in a JSON file ({sub: {username, login?, password, email, name, groups}}) the tests rewrite (re-read on every look-up), so a test can move a
// person out of a group and see the next sign-in carry the change. The login page checks passwords.
//
//   node provider.mjs --port 9350 --accounts accounts.json --client-id portal --client-secret s \
//        --redirect-uri http://testserver/oidc/callback/
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    accounts: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string' },
  },
});
const issuer = `http://127.0.0.1:${args.port}`;

function people() {
  return JSON.parse(readFileSync(args.accounts, 'utf8'));
}

// Fresh signing keys per run: nothing secret is checked in.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-signing', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    redirect_uris: [args['redirect-uri']],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [jwk] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username', 'given_name', 'family_name'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['test-cookie-key-only-for-the-tests'] },
  async findAccount(ctx, sub) {
    const person = people()[sub];
    if (!person) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          email: person.email,
          email_verified: true,
          name: person.name,
          given_name: person.given_name,
          family_name: person.family_name,
          preferred_username: person.username,
          groups: person.groups,
        };
      },
    };
  },
});
provider.proxy = false;

function page(res, status, body) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><html><body>${body}</body></html>`);
}

function loginForm(uid, error) {
  return `<h1>Corporate sign-in</h1>${error ? `<p class="error">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}">
<input name="login" autocomplete="username"><input name="password" type="password"><button>Sign in</button></form>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

// The first-party login page: checks the password, then grants the scopes the client asked for (a
// company's own portal needs no consent screen).
async function grantFor(accountId, details) {
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  return grant.save();
}

async function interaction(req, res) {
  const uid = req.url.split('/')[2];
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return page(res, 400, 'interaction mismatch');
  if (details.prompt.name === 'consent') {
    const grantId = await grantFor(details.session.accountId, details);
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (req.method === 'GET') return page(res, 200, loginForm(uid));
  const form = await readForm(req);
  const login = form.get('login') || '';
  const person = Object.entries(people()).find(([, p]) => (p.login ?? p.username) === login);
  if (!person || person[1].password !== form.get('password')) return page(res, 401, loginForm(uid, 'Wrong name or password.'));
  const [accountId] = person;
  const grantId = await grantFor(accountId, details);
  return provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } },
    { mergeWithLastSubmission: false });
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((err) => page(res, 500, String(err)));
  } else {
    callback(req, res);
  }
});
server.listen(Number(args.port), '127.0.0.1', () => console.log(`ready ${issuer}`));
