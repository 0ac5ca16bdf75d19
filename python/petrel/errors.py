"""Exceptions raised by petrel.

Every failure of the C++ client arrives as a PetrelError whose ``code`` is
the absl::Status code name (``"DEADLINE_EXCEEDED"``, ``"INVALID_ARGUMENT"``,
...) and whose ``message`` is the Status message. The common codes have
subclasses that also derive from the matching built-in exception, so
``except TimeoutError`` catches a request that ran past its deadline.
"""


class PetrelError(RuntimeError):
    """A Petrel operation failed. ``code``: the Status code name;
    ``code_number``: its number; ``message``: what went wrong."""

    def __init__(self, message, code="UNKNOWN", code_number=2):
        super().__init__(f"{code}: {message}")
        self.message = message
        self.code = code
        self.code_number = code_number


class DeadlineExceededError(PetrelError, TimeoutError):
    """No answer within the deadline (the request may still complete)."""


class InvalidArgumentError(PetrelError, ValueError):
    """Bad arguments, a bad configuration or a malformed answer."""


class UnavailableError(PetrelError, ConnectionError):
    """A peer could not be reached or a port is taken; retryable."""


class FailedPreconditionError(PetrelError):
    """The client is in the wrong state (closed, not joined)."""


class AbortedError(PetrelError):
    """The job ended (failed or interrupted) while waiting."""


class NotFoundError(PetrelError, LookupError):
    """An unknown table, node or range."""


class ResourceExhaustedError(PetrelError):
    """Over a limit (message size, queue)."""


_BY_CODE = {
    "DEADLINE_EXCEEDED": DeadlineExceededError,
    "INVALID_ARGUMENT": InvalidArgumentError,
    "UNAVAILABLE": UnavailableError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "ABORTED": AbortedError,
    "NOT_FOUND": NotFoundError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
}


def from_status(code_number, code, message):
    """The exception for a failed Status (called by the C++ extension)."""
    return _BY_CODE.get(code, PetrelError)(message, code, code_number)
