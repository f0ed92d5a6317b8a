"""Job submission through slurmrestd over its unix socket (`rest_auth/local`: the socket's peer is the
user, no token), so a start costs one HTTP request instead of an `sbatch` process. One connection per
call: starts run in parallel threads, and a call shares nothing with another. Every failure becomes a
BackendError with Slurm's own message."""
import http.client
import json
import socket

from scheduler.backends.base import BackendError
from scheduler.backends.slurm.cli import UNREACHABLE

API = "/slurm/v0.0.38"  # Slurm 22.05's REST API


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class SlurmRest:
    def __init__(self, socket_path: str, timeout: float):
        self.socket_path = socket_path
        self.timeout = timeout

    def post(self, path: str, body: dict) -> dict:
        connection = _UnixConnection(self.socket_path, self.timeout)
        try:
            connection.request("POST", API + path, body=json.dumps(body),
                               headers={"Content-Type": "application/json", "Accept": "application/json"})
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise BackendError(f"slurmrestd does not answer at {self.socket_path} ({exc.strerror}): is it running "
                               "with -a rest_auth/local on that socket?", unavailable=True) from exc
        except TimeoutError as exc:
            raise BackendError(f"slurmrestd did not answer within {self.timeout:g}s", unavailable=True) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise BackendError(f"slurmrestd at {self.socket_path}: {exc}", unavailable=True) from exc
        finally:
            connection.close()
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        errors = [e for e in (data or {}).get("errors", []) if e] if isinstance(data, dict) else []
        if errors or response.status != 200 or not isinstance(data, dict):
            message = _message(errors[0]) if errors else f"HTTP {response.status}: {text.strip()[:200]}"
            raise BackendError(f"slurmrestd {path} failed: {message[:300]}",
                               unavailable=any(marker in message for marker in UNREACHABLE))
        return data

    def submit(self, body: dict) -> str:
        """Submit a batch job ({"script": ..., "job": {...}}); its Slurm id."""
        data = self.post("/job/submit", body)
        slurm_id = str(data.get("job_id", ""))
        if not slurm_id.isdigit():
            raise BackendError(f"slurmrestd answered {json.dumps(data)[:100]}, not a job id")
        return slurm_id


def _message(error) -> str:
    """Slurm's words for an error entry: its description ("Invalid account or account/partition combination
    specified"), and the call that failed where slurmrestd says."""
    if not isinstance(error, dict):
        return str(error)
    words = error.get("description") or error.get("error") or ""
    if error.get("error") and error.get("error") != words:
        words = f"{words} ({error['error']})" if words else str(error["error"])
    return words or json.dumps(error)
