"""Sift's small error hierarchy; each error carries the one sentence a person should see."""

from __future__ import annotations


class SiftError(Exception):
    """Base error. `user_message` is safe to show; `str(error)` is the cause, for the log."""

    user_message = "Something went wrong on my side."

    def __init__(self, cause: str, *, user_message: str | None = None) -> None:
        super().__init__(cause)
        if user_message is not None:
            self.user_message = user_message


class ConfigError(SiftError):
    user_message = "Sift is not configured correctly."


class RetrievalError(SiftError):
    """`unreachable`: the index server itself is away (stopped, restarting), so waiting may
    mend it; otherwise the request was refused and asking again would fail the same way."""

    user_message = "I can't reach the knowledge index right now."

    def __init__(self, cause: str, *, user_message: str | None = None,
                 unreachable: bool = False) -> None:
        super().__init__(cause, user_message=user_message)
        self.unreachable = unreachable


class LLMError(SiftError):
    """A model call failed, whatever the provider. `kind` is what retries and the circuit
    breaker read (rag/llm_errors.py lists them); `reason` names the failure more finely where
    one kind covers several (`auth`: a refused key, or a permission the identity lacks);
    `retry_after_s` is the provider's own hint, when it gave one."""

    user_message = "The language model is unavailable right now."

    def __init__(self, cause: str, *, kind: str, retryable: bool, reason: str = "",
                 retry_after_s: float | None = None) -> None:
        super().__init__(cause)
        self.kind = kind
        self.retryable = retryable
        self.reason = reason or kind
        self.retry_after_s = retry_after_s


class SyncError(SiftError):
    user_message = "The knowledge sync failed."


class PlatformRefused(SiftError):
    """A chat platform would not let Sift read what the person pointed at (a thread through
    Graph): its `user_message` is what that person is told."""


class InputError(SiftError):
    """The person's input cannot be used as it is (too long, empty, unknown id)."""

    user_message = "I couldn't use that input."
