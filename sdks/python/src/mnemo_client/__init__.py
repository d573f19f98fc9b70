"""Python client of mnemo, the long-term memory platform for LLM agents.

    from mnemo_client import MnemoClient

    with MnemoClient() as mnemo:  # $MNEMO_URL, $MNEMO_TOKEN
        mnemo.post_messages("user-42", [{"role": "user", "content": "I love green tea"}])
        for result in mnemo.search("user-42", "what does she drink?").results:
            print(result.score, result.content)
"""

from . import models
from ._retry import RetryPolicy
from ._version import __version__
from .async_client import AsyncMnemoClient
from .client import MnemoClient
from .errors import (
    AuthError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    MethodNotAllowed,
    MnemoError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
    ValidationError,
    VersionConflict,
)

__all__ = [
    "AsyncMnemoClient",
    "MnemoClient",
    "RetryPolicy",
    "models",
    "__version__",
    "AuthError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "MethodNotAllowed",
    "MnemoError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServerError",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "UnsupportedMediaType",
    "ValidationError",
    "VersionConflict",
]
