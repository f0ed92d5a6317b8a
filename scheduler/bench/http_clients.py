"""Clients of the portal's API over HTTP, as a member's script or page sends its requests: signed in with a
personal token (`token`), or with a session of their own (a row the server reads on every request) and the
CSRF pair Django checks on a write (`signed_in`: the cookie's secret and the same secret in the X-CSRFToken
header). Each request goes over a connection of its own. Set-up is not timed."""
import http.client
import json

from django.test import Client
from django.utils.crypto import get_random_string


def token(key: str) -> dict:
    return {"Authorization": f"Token {key}"}


def signed_in(user) -> dict:
    """The headers of a request from `user`'s own session."""
    client = Client()
    client.force_login(user)  # a session row, as signing in on the login page makes
    csrf = get_random_string(32)
    return {"Cookie": f"sessionid={client.cookies['sessionid'].value}; csrftoken={csrf}", "X-CSRFToken": csrf}


def request_json(port: int, method: str, path: str, headers: dict, body: dict | None = None,
                 timeout: float = 300) -> tuple[int, dict]:
    """The answer's status and JSON body (empty when it has none)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        sent = {**headers, "Content-Type": "application/json"} if body is not None else headers
        connection.request(method, path, json.dumps(body) if body is not None else None, sent)
        response = connection.getresponse()
        data = response.read()
        try:
            return response.status, json.loads(data) if data else {}
        except ValueError:
            return response.status, {"body": data[:200].decode(errors="replace")}
    finally:
        connection.close()
