"""Sign-in flows as a person goes through them: the portal's login form (local and LDAP), and the
OpenID authorization code flow — the portal sends the browser to the provider, a real HTTP client (the
browser, keeping the provider's cookies) follows the provider's redirects and fills in its login page, and
the provider's answer comes back to the portal's callback."""
import re
from urllib.parse import urljoin, urlsplit

import requests
from django.urls import reverse

PORTAL = "http://testserver"


def form_sign_in(client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


class Browser:
    """The provider's side of a browser: its cookies (the provider's session) live as long as this does."""

    def __init__(self):
        self.session = requests.Session()

    def to_provider_and_back(self, client, portal_redirect, login: str = "", password: str = ""):
        """Follow the portal's redirect to the provider until the provider sends the browser back; the
        portal's answer to that (its callback's response). Fills in the login page if the provider shows it;
        returns the provider's own page when it refuses the password."""
        assert portal_redirect.status_code == 302, portal_redirect
        url = portal_redirect["Location"]
        for _hop in range(12):
            response = self.session.get(url, allow_redirects=False, timeout=10)
            if response.status_code == 200 and 'name="password"' in response.text:
                assert login, "the provider asks for a password"
                action = re.search(r'action="([^"]+)"', response.text).group(1)
                response = self.session.post(urljoin(url, action), data={"login": login, "password": password},
                                             allow_redirects=False, timeout=10)
            if response.status_code not in (301, 302, 303):
                return response
            url = urljoin(url, response.headers["Location"])
            if url.startswith(PORTAL):
                back = urlsplit(url)
                return client.get(f"{back.path}?{back.query}")
        raise AssertionError("the provider never sent the browser back to the portal")


def oidc_sign_in(client, login: str, password: str, *, next_url: str = "", browser: Browser | None = None):
    start = client.get(reverse("sso-oidc-start") + (f"?next={next_url}" if next_url else ""))
    return (browser or Browser()).to_provider_and_back(client, start, login, password)
