"""Every page and form of the portal, as each role, in zh-Hans: nothing the catalogue should say in Chinese
is shown in English, and no stored code is shown where its label belongs (tests/i18n_walk.py says how).

The walk reads every URL pattern the portal serves to a browser (a new page without ids here fails the
walk until it is added), each as platform admin, quota approver, auditor, tenant admin and member, then
the error states of the forms. Its failure message lists page, role and the untranslated texts."""
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.translation import trans_real

from tests import i18n_walk
from tests.i18n_walk_world import build

pytestmark = pytest.mark.django_db

# Not pages a person reads in the portal's language: machine endpoints, Django's admin (its own
# catalogue) and POST-only actions (walked below as forms, with their error states).
# The OpenID start and callback only redirect (to the provider, back to the page asked for or the login page).
NOT_PAGES = {"healthz", "readyz", "metrics", "api-schema", "logout", "set_language", "report-download",
             "sso-oidc-start", "sso-oidc-callback"}
NOT_PAGE_PREFIXES = ("admin/", "api/")
ACTIONS = {"quota-request-preview", "quota-request-action", "job-cancel", "job-environment", "job-checkpoint",
           "job-contents",
           "pool-inventory-sync", "preemption-approve", "preemption-reject", "whatif-attach", "whatif-simulate-switch",
           "whatif-simulate-request", "whatif-sacct", "account-token-revoke", "notice-channel-delete", "notice-channel-test",
           "notice-channel-toggle", "report-mail-resend"}
ROLES = ("platform admin", "quota approver", "auditor", "tenant admin", "member")
HTMX = {"HTTP_HX_REQUEST": "true"}
VARIANT_ROLES = ("platform admin", "member")  # the other roles see the same words on these variants
ANONYMOUS_PAGES = {"login", "home", "preemptions"}  # every other page sends a stranger to the login page too


def _patterns(resolver=None, prefix=""):
    for p in (resolver or get_resolver()).url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern) and p.name:
            yield p.name, prefix + str(p.pattern)


def browser_pages() -> set[str]:
    return {name for name, route in _patterns() if name not in NOT_PAGES | ACTIONS
            and not route.startswith(NOT_PAGE_PREFIXES)}


def pages(walk) -> list[tuple[str, str, dict, tuple]]:
    """(URL name, URL, extra request headers, roles) of every page with the ids the walk's world gives it."""
    ids = walk.ids
    jobs = [ids["requeued_job"], ids["awaiting_victim"], ids["preempting_job"], ids["env_job"], ids["running_job"]]
    by_name = {
        "home": [()], "platform-dashboard": [()], "login": [()], "account-tokens": [()], "pools": [()],
        "tenant-quota": [("alpha",)], "tenant-quota-requests": [("alpha",)], "quota-request-new": [("alpha",)],
        "quota-request-detail": [(pk,) for pk in ids["requests"]], "approvals": [()], "leases": [()],
        "tenant-lease-panel": [("alpha",)], "platform-switches": [()], "tenant-queue": [("alpha",)],
        "pool-queue": [("gpu-a",)], "job-detail": [(pk,) for pk in jobs], "preemptions": [()], "reports": [()],
        "audit": [()], "whatif": [()], "whatif-detail": [(ids["whatif"],)],
        "tenant-notice-channels": [("alpha",)], "report-mail": [("alpha",)],
        "pool-tree": [("gpu-a",)], "tenant-members": [("alpha",)], "unit-members": [("cv",)],
        "unit-quota-request-new": [("cv",)],
    }
    unknown = browser_pages() - set(by_name)
    assert not unknown, f"pages the zh-Hans walk does not know how to reach; add their ids in pages(): {sorted(unknown)}"
    walked = [(name, reverse(name, args=args), {}, ROLES) for name, variants in by_name.items() for args in variants]
    walked += [(*variant, VARIANT_ROLES) for variant in [  # filters, other states and the live regions HTMX swaps in
        ("preemptions", "/preemptions/?state=all", {}), ("approvals", "/approvals/?state=all", {}),
        ("approvals", "/approvals/", HTMX), ("leases", "/leases/?state=all", {}),
        ("tenant-quota-requests", "/tenants/alpha/quota-requests/?state=submitted", HTMX),
        ("tenant-queue", "/tenants/alpha/queue/", HTMX), ("tenant-queue", "/tenants/alpha/queue/?f-status=bogus", {}),
        ("job-detail", reverse("job-detail", args=[ids["requeued_job"]]), HTMX),
        ("quota-request-detail", reverse("quota-request-detail", args=[ids["requests"][1]]), HTMX),
        ("audit", "/audit/?type=preemption.planned", {}),
    ]]
    return walked


def forms(walk) -> list[tuple[str, str, str, dict, dict]]:
    """(role, URL name, URL, POST data, headers): each form with what a person gets wrong, and each action."""
    ids = walk.ids
    draft, submitted, endorsed, _rejected, _applied = ids["requests"]
    window = {"pool": "gpu-a", "gpu_model": "H100-80G", "gpus": "30", "kind": "temporary",
              "effective_at": "2030-01-02T10:00", "ends_at": "2030-01-01T10:00", "justification": ""}
    return [
        ("member", "quota-request-new", "/tenants/alpha/quota-requests/new/", {}, {}),
        ("member", "quota-request-new", "/tenants/alpha/quota-requests/new/", window, {}),
        ("member", "quota-request-new", "/tenants/alpha/quota-requests/new/",
         {**window, "kind": "increase", "gpus": "500", "effective_at": "", "ends_at": "",
          "justification": "More for the Q1 model"}, {}),
        ("member", "quota-request-preview", "/tenants/alpha/quota-requests/preview/", {**window, "gpus": "500"}, HTMX),
        ("member", "quota-request-preview", "/tenants/alpha/quota-requests/preview/", {**window, "gpus": "2"}, {}),
        ("tenant admin", "quota-request-action", f"/quota-requests/{submitted}/reject/", {}, {}),
        ("quota approver", "quota-request-action", f"/quota-requests/{endorsed}/reject/", {}, HTMX),
        ("member", "quota-request-action", f"/quota-requests/{endorsed}/approve/", {}, {}),
        ("tenant admin", "quota-request-action", f"/quota-requests/{draft}/submit/", {}, {}),
        ("member", "tenant-queue", "/tenants/alpha/queue/", {}, {}),
        ("member", "tenant-queue", "/tenants/alpha/queue/", {
            "name": "too-big", "project": "train", "workload_class": "training", "pool": "gpu-a",
            "gpu_model": "H100-80G", "gpus": "64", "replicas": "1", "max_runtime_minutes": "60"}, {}),
        ("auditor", "tenant-queue", "/tenants/alpha/queue/", {"name": "x"}, {}),
        ("member", "job-environment", f"/jobs/{ids['env_job']}/environment/", {"ready": "0", "detail": ""}, {}),
        ("member", "job-checkpoint", f"/jobs/{ids['env_job']}/checkpoint/", {}, {}),
        ("platform admin", "job-contents", f"/jobs/{ids['env_job']}/contents/", {"reason": "short"}, {}),
        ("platform admin", "job-contents", f"/jobs/{ids['env_job']}/contents/", {"reason": "support ticket 1234"}, {}),
        ("quota approver", "preemption-reject", f"/preemptions/{ids['awaiting']}/reject/", {}, {}),
        ("member", "preemption-approve", f"/preemptions/{ids['awaiting']}/approve/", {}, {}),
        ("quota approver", "preemption-approve", f"/preemptions/{ids['reclaim']}/approve/", {}, {}),
        ("platform admin", "platform-switches", "/platform/switches/", {"switch": "preemption"}, {}),
        ("platform admin", "platform-switches", "/platform/switches/", {"switch": "pool"}, {}),
        ("member", "platform-switches", "/platform/switches/", {"switch": "preemption"}, {}),
        ("member", "account-tokens", "/account/tokens/", {}, {}),
        ("member", "account-tokens", "/account/tokens/", {"name": "laptop", "lifetime_days": "30"}, {}),
        ("platform admin", "whatif", "/what-if/", {}, {}),
        ("platform admin", "whatif-sacct", "/what-if/sacct/", {
            "pool": "gpu-a", "file": SimpleUploadedFile("sacct.txt", b"JobID|Account\n")}, {}),
        ("platform admin", "whatif-simulate-switch", "/what-if/switch/", {"pool": "gpu-a", "switch_value": "bogus"}, {}),
        ("platform admin", "whatif-simulate-request", f"/what-if/quota-requests/{endorsed}/", {}, {}),
        ("platform admin", "whatif-attach", f"/what-if/{ids['whatif']}/attach/", {"decision": ""}, {}),
        ("platform admin", "pool-inventory-sync", "/platform/pools/gpu-a/sync/", {}, {}),
        ("member", "job-cancel", f"/jobs/{ids['env_job']}/cancel/", {}, {}),  # last: it changes the world
    ]


def _client(user=None) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=i18n_walk.LANGUAGE)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = i18n_walk.LANGUAGE
    if user is not None:
        client.force_login(user)
    return client


def _read(response, reader, lookups) -> list[str]:
    assert response.status_code < 500, f"{response.status_code} from {response.request['PATH_INFO']}"
    found = [f"missing in the catalogue: {m!r}" for m in dict.fromkeys(lookups.take())]
    if "html" in response.get("Content-Type", ""):
        found += reader.findings(response.content.decode())
    return found


def walk_all(walk, *, only=None) -> tuple[dict, list]:
    """Walk every page as every role, then every form; ``only`` limits it to these URL names."""
    reader, lookups = i18n_walk.Reader(data=walk.data), i18n_walk.Lookups()
    problems, visited = {}, []
    with lookups.recording():
        for role in ("anonymous", *ROLES):
            client = _client(walk.users.get(role))
            for name, url, headers, roles in pages(walk):
                if (only and name not in only) or (role == "anonymous" and name not in ANONYMOUS_PAGES) or (
                        role != "anonymous" and role not in roles):
                    continue
                response = client.get(url, follow=True, **headers)
                visited.append((role, name, response.status_code))
                if found := _read(response, reader, lookups):
                    problems.setdefault((role, f"GET {url}"), []).extend(found)
            if role == "anonymous":
                found = _read(client.post("/login/", {"username": "alpha-dev", "password": "wrong"}), reader, lookups)
                if found:
                    problems[(role, "POST /login/")] = found
        for role, name, url, data, headers in forms(walk):
            if only and name not in only:
                continue
            response = _client(walk.users[role]).post(url, data, follow=True, **headers)
            visited.append((role, name, response.status_code))
            if found := _read(response, reader, lookups):
                problems.setdefault((role, f"POST {url} {sorted(data)}"), []).extend(found)
    return problems, visited


def test_every_page_and_form_reads_in_chinese_for_every_role(world):
    walk = build(world)
    problems, visited = walk_all(walk)
    # Not vacuous: each page was served with its content at least once, and the walk is as long as planned.
    served = {name for _role, name, status in visited if status == 200}
    assert browser_pages() <= served, f"pages never served with 200: {sorted(browser_pages() - served)}"
    planned = sum(len(roles) + (name in ANONYMOUS_PAGES) for name, _url, _headers, roles in pages(walk))
    assert len(visited) == planned + len(forms(walk)) and len(visited) > 180
    assert not problems, i18n_walk.report(problems)


@pytest.fixture
def catalogue_without():
    """The zh-Hans catalogue as loaded, less one entry, until the test ends (then it is loaded afresh)."""
    def drop(msgid: str):
        catalogues = trans_real.translation(i18n_walk.LANGUAGE)._catalog._catalogs
        # The portal's catalogue is read twice (as LOCALE_PATHS and as the portal app's locale): drop it from both.
        assert sum(catalogue.pop(msgid, None) is not None for catalogue in catalogues) >= 1, msgid

    yield drop
    trans_real._translations.clear()


def test_the_walk_fails_naming_page_role_and_text_when_a_translation_is_deleted(world, catalogue_without):
    walk = build(world)
    assert walk_all(walk, only={"preemptions"})[0] == {}
    catalogue_without("Grace until")
    problems, visited = walk_all(walk, only={"preemptions"})
    message = i18n_walk.report(problems)
    assert len(visited) == 2 + 5 + 2  # the page as a stranger, as every role; its "all" filter as two roles
    assert "GET /preemptions/" in message and "as member:" in message and "as quota approver:" in message
    assert "missing in the catalogue: 'Grace until'" in message
    assert "english: 'Grace until'" in message  # and the English shown where the Chinese was


def test_the_reader_catches_codes_english_and_plain_strings():
    reader = i18n_walk.Reader(data={"Alpha team"})
    html = ("<p>Alpha team</p><td>awaiting_approval</td><span>tenant_admin</span><dt>Grace until</dt>"
            "<label>Pick a pool first</label><code>notified</code><p translate='no'>Some data</p>"
            "<input type='submit' value='Save as draft'><p>资源池 H100-80G GPU</p>")
    assert reader.findings(html) == [
        "raw: 'awaiting_approval' (Preemption.state) in 'awaiting_approval'",
        "raw: 'tenant_admin' (Membership.role) in 'tenant_admin'",
        "english: 'Grace until'", "prose: 'Pick a pool first'", "english: 'Save as draft'"]
