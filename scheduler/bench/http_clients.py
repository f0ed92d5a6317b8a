"""Clients of the portal's API over HTTP, as a member's script or page sends its writes: each client with its
own session (a row the server reads on every request) and the CSRF pair Django checks on a write (the cookie's
secret and the same secret in the X-CSRFToken header). Set-up, not timed."""
import http.client
import json
from dataclasses import dataclass

from django.test import Client
from django.utils.crypto import get_random_string


@dataclass(frozen=True)
class SignedIn:
    cookie: str
    csrf: str


def signed_in(user) -> SignedIn:
    client = Client()
    client.force_login(user)  # a session row, as signing in on the login page makes
    csrf = get_random_string(32)
    return SignedIn(cookie=f"sessionid={client.cookies['sessionid'].value}; csrftoken={csrf}", csrf=csrf)


def post_json(port: int, path: str, who: SignedIn, body: dict, timeout: float = 300) -> tuple[int, dict]:
    """The answer's status and JSON body (empty when it has none), over a connection of its own."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, json.dumps(body), {
            "Content-Type": "application/json", "Cookie": who.cookie, "X-CSRFToken": who.csrf})
        response = connection.getresponse()
        data = response.read()
        try:
            return response.status, json.loads(data) if data else {}
        except ValueError:
            return response.status, {"body": data[:200].decode(errors="replace")}
    finally:
        connection.close()
