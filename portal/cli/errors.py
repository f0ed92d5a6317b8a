"""Exit codes and the one error type of gpuq. Scripts branch on the code, people read the message."""

EXIT_OK = 0
EXIT_USAGE = 2  # bad arguments or configuration (argparse uses 2 as well)
EXIT_AUTH = 3  # the token was refused (401) or the caller may not do this (403)
EXIT_NOT_FOUND = 4  # no such job, tenant, lease or request (404)
EXIT_REFUSED = 5  # the portal refused the input or the action (400, 409, 413)
EXIT_UNAVAILABLE = 6  # the portal did not answer, or answered with a server error


class CliError(Exception):
    def __init__(self, message: str, code: int, payload: object = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.payload = payload
