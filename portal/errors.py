"""Errors that services raise beside Django's ValidationError and PermissionDenied."""


class ConflictError(Exception):
    """Another actor changed the object first (a lost compare-and-swap); the caller may retry."""

    def __init__(self, message: str, *, code: str = "conflict"):
        super().__init__(message)
        self.code = code
