"""Storage errors: what callers can catch without knowing SQLAlchemy."""

from __future__ import annotations


class StorageError(Exception):
    """A storage operation could not be done; the message says what and why in one sentence."""


class UnknownInteraction(StorageError, LookupError):
    """An interaction id that was never recorded (or was purged); nothing was written."""

    def __init__(self, interaction_id: int) -> None:
        super().__init__(f"No interaction with id {interaction_id}: it was never recorded "
                         "or has been purged; nothing was written.")
        self.interaction_id = interaction_id


class UnknownSyncRun(StorageError):
    def __init__(self, run_id: int) -> None:
        super().__init__(f"No sync run with id {run_id}; nothing was written.")
        self.run_id = run_id


class DatabaseUnavailable(StorageError):
    """The database server could not be reached or went away mid-way (a restart, a failover):
    nothing of the unit of work was kept, so it may be done again once the server is back."""


class DiskFull(StorageError):
    """The disk under the database is full: nothing can be written until room is made."""
