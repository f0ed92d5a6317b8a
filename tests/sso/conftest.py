"""Fixtures for the single sign-on tests: a private slapd (tests/sso/slapd.py) and a real OpenID
provider (node's oidc-provider, tests/sso/oidc_provider/), each started once per test process on a free
loopback port, and the portal's settings pointed at them. Each test starts from an empty directory and a
provider that knows nobody (its people are a file it reads at each look-up; a test's browser session is
its own cookie jar). Neither is ever mocked; both fail, never skip, when they cannot start (.ci/run
installs slapd and runs `npm ci`)."""
import json
import subprocess
import time
from pathlib import Path

import pytest
from django.test import override_settings

from portal.accounts.sso import config as sso_config
from tests.sso import slapd

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
CALLBACK = "http://testserver/sso/oidc/callback/"
CLIENT_ID = "gpu-portal"
CLIENT_SECRET = "a-client-secret-for-the-tests-only-0123456789"
SERVICE_PASSWORD = "service-secret-2026"


@pytest.fixture(scope="session")
def _directories(tmp_path_factory):
    """The process's slapd, started again if a test stopped it (a directory that does not answer)."""
    started: list[slapd.Directory] = []

    def current() -> slapd.Directory:
        if not started or started[-1].process.poll() is not None:
            started.append(slapd.start(tmp_path_factory.mktemp("slapd")))
        return started[-1]

    yield current
    for running in started:
        running.stop()


@pytest.fixture
def directory(_directories):
    running = _directories()
    running.empty()
    return running


def ldap_env(directory) -> dict[str, str]:
    return {"AUTH_LDAP_SERVER_URI": directory.uri,
            "AUTH_LDAP_BIND_DN": f"uid=portal-svc,{slapd.PEOPLE}",
            "AUTH_LDAP_BIND_PASSWORD": SERVICE_PASSWORD,
            "AUTH_LDAP_USER_SEARCH_BASE": slapd.PEOPLE,
            "AUTH_LDAP_GROUP_SEARCH_BASE": slapd.GROUPS,
            "AUTH_LDAP_TIMEOUT_SECONDS": "3"}


@pytest.fixture
def ldap_on(directory, db):
    """The portal signs in against the private directory (the settings the README shows)."""
    directory.add_person("portal-svc", SERVICE_PASSWORD, given="Portal", surname="Service")
    env = ldap_env(directory)
    with override_settings(**sso_config.ldap_settings(env),
                           AUTHENTICATION_BACKENDS=sso_config.authentication_backends(ldap_on=True, oidc_on=False)):
        yield directory


class Provider:
    """A running oidc-provider and the people it knows (rewritten by the tests, read at each look-up)."""

    def __init__(self, issuer: str, accounts: Path, process: subprocess.Popen):
        self.issuer, self.accounts, self.process = issuer, accounts, process
        self._people: dict[str, dict] = {}

    def person(self, sub: str, username: str, password: str, groups: list[str], **claims) -> None:
        self._people[sub] = {"username": username, "login": claims.get("login", username), "password": password,
                             "groups": groups,
                             "email": claims.get("email", f"{username}@example.com"),
                             "name": claims.get("name", username.title()),
                             "given_name": claims.get("given_name", username.title()), "family_name": "Example"}
        self.accounts.write_text(json.dumps(self._people))

    def set_groups(self, sub: str, groups: list[str]) -> None:
        self._people[sub]["groups"] = groups
        self.accounts.write_text(json.dumps(self._people))

    def env(self) -> dict[str, str]:
        return {"OIDC_RP_CLIENT_ID": CLIENT_ID, "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
                "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/auth",
                "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token",
                "OIDC_OP_USER_ENDPOINT": f"{self.issuer}/me",
                "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/jwks",
                "OIDC_PROVIDER_NAME": "Example SSO",
                "OIDC_TIMEOUT_SECONDS": "5"}


@pytest.fixture(scope="session")
def _provider_process(tmp_path_factory):
    """One oidc-provider per test process: node takes seconds to start it under load, a test needs none."""
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(f"oidc-provider is not installed: run `npm ci` in {PROVIDER_DIR} (.ci/run does)")
    folder = tmp_path_factory.mktemp("oidc")
    accounts = folder / "oidc-accounts.json"
    accounts.write_text("{}")
    port = slapd.free_port()
    log = open(folder / "oidc-provider.log", "w+")
    process = subprocess.Popen(
        ["node", str(PROVIDER_DIR / "provider.mjs"), "--port", str(port), "--accounts", str(accounts),
         "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET, "--redirect-uri", CALLBACK],
        stdout=log, stderr=subprocess.STDOUT, cwd=PROVIDER_DIR)
    deadline = time.monotonic() + 30
    while "ready" not in (folder / "oidc-provider.log").read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"oidc-provider did not start: {(folder / 'oidc-provider.log').read_text()}")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", accounts, process
    process.terminate()
    process.wait(timeout=10)
    log.close()


@pytest.fixture
def provider(_provider_process):
    issuer, accounts, process = _provider_process
    if process.poll() is not None:
        raise RuntimeError(f"oidc-provider exited ({process.returncode}) during an earlier test")
    accounts.write_text("{}")  # it knows nobody until the test says so
    return Provider(issuer, accounts, process)


@pytest.fixture
def oidc_on(provider, db):
    with override_settings(**sso_config.oidc_settings(provider.env()),
                           AUTHENTICATION_BACKENDS=sso_config.authentication_backends(ldap_on=False, oidc_on=True)):
        yield provider
