"""Sign-in flows as a person goes through them: the portal's login form (local and LDAP), and the
OpenID authorization code flow — the portal's start page sends the browser to the provider, a real HTTP
client follows the provider's redirects and fills in its login page, and the provider's answer comes back
to the portal's callback."""
import re
from urllib.parse import urljoin, urlsplit

import requests
from django.urls import reverse

PORTAL = "http://testserver"


def form_sign_in(client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


def oidc_sign_in(client, provider_login: str, password: str, *, next_url: str = ""):
    """The portal's answer to the provider's redirect back (the callback's response)."""
    start = client.get(reverse("sso-oidc-start") + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302, start
    browser = requests.Session()
    url, response = start["Location"], None
    for _hop in range(12):
        response = browser.get(url, allow_redirects=False, timeout=10)
        if response.status_code in (301, 302, 303):
            url = urljoin(url, response.headers["Location"])
        elif response.status_code == 200 and 'name="password"' in response.text:
            action = re.search(r'action="([^"]+)"', response.text).group(1)
            response = browser.post(urljoin(url, action), data={"login": provider_login, "password": password},
                                    allow_redirects=False, timeout=10)
            if response.status_code != 303 and response.status_code != 302:
                return response  # the provider refused the password
            url = urljoin(url, response.headers["Location"])
        else:
            raise AssertionError(f"unexpected provider answer {response.status_code}: {response.text[:500]}")
        if url.startswith(PORTAL):
            back = urlsplit(url)
            return client.get(f"{back.path}?{back.query}")
    raise AssertionError("the provider never sent the browser back to the portal")
