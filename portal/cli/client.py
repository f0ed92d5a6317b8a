"""The HTTP side of gpuq: one request at a time to /api/v1/ with `Authorization: Token …`, JSON in and
out, and every failure turned into a CliError with the portal's own message and an exit code."""
import json
import os
import urllib.error
import urllib.parse
import urllib.request

from portal.cli.config import Config
from portal.cli.errors import (
    EXIT_AUTH,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    CliError,
)

UNREACHABLE = "Cannot reach the portal at {url}: {reason}"
SERVER_ERROR = "The portal answered {status} for {path}; try again, or tell the platform team."
NOT_JSON = "The portal at {url} did not answer with JSON ({status}): is GPUQ_URL the portal's address?"
TIMEOUT_SECONDS = 30
STATUS_CODES = {401: EXIT_AUTH, 403: EXIT_AUTH, 404: EXIT_NOT_FOUND}


def accept_language() -> str:
    """The server's texts (wait reasons, errors) in the terminal's language: GPUQ_LANG, else LANG."""
    raw = os.environ.get("GPUQ_LANG") or os.environ.get("LC_ALL") or os.environ.get("LANG") or "en"
    code = raw.split(".")[0].replace("_", "-").lower()
    if code.startswith("zh"):
        return "zh-Hans"
    return "en" if code in ("c", "posix", "") else code


def _message(payload, fallback: str) -> str:
    """The portal's words: `detail`, or each field with its messages (`gpus: Must be at least 1.`)."""
    if isinstance(payload, dict):
        if isinstance(payload.get("detail"), str):
            return payload["detail"]
        parts = []
        for field, messages in payload.items():
            text = "; ".join(str(m) for m in messages) if isinstance(messages, list) else str(messages)
            parts.append(text if field in ("non_field_errors", "detail") else f"{field}: {text}")
        if parts:
            return "\n".join(parts)
    if isinstance(payload, list) and payload:
        return "; ".join(str(m) for m in payload)
    return fallback


class Client:
    def __init__(self, config: Config):
        self.config = config

    def url(self, path: str, params: dict | None = None) -> str:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
        return f"{self.config.url}/api/v1/{path.lstrip('/')}" + (f"?{query}" if query else "")

    def raw(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url(path, params), data=data, method=method)
        request.add_header("Accept-Language", accept_language())
        request.add_header("Accept", "application/json, text/csv;q=0.9")
        if self.config.token:
            request.add_header("Authorization", f"Token {self.config.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise self._error(exc, path) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CliError(UNREACHABLE.format(url=self.config.url, reason=reason), EXIT_UNAVAILABLE) from None

    def _error(self, exc: urllib.error.HTTPError, path: str) -> CliError:
        body = exc.read()
        try:
            payload = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            payload = None
        if exc.code >= 500:
            return CliError(SERVER_ERROR.format(status=exc.code, path=path), EXIT_UNAVAILABLE, payload)
        if payload is None:
            return CliError(NOT_JSON.format(url=self.config.url, status=exc.code), EXIT_UNAVAILABLE)
        code = STATUS_CODES.get(exc.code, EXIT_REFUSED)
        return CliError(_message(payload, f"HTTP {exc.code}"), code, payload)

    def json(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None):
        raw = self.raw(method, path, params=params, body=body)
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise CliError(NOT_JSON.format(url=self.config.url, status=200), EXIT_UNAVAILABLE) from None

    def get(self, path: str, **params):
        return self.json("GET", path, params=params)

    def post(self, path: str, body: dict):
        return self.json("POST", path, body=body)
