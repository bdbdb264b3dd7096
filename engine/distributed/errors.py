"""torch.distributed's exception classes. All are RuntimeErrors, so ``except RuntimeError`` still catches
them: ``DistBackendError`` for a failure inside a backend (``monitored_barrier``'s missing ranks),
``DistStoreError`` for a store's wait that timed out, ``DistNetworkError`` for a connection that failed."""


class DistError(RuntimeError):
    """Base of the errors of engine.distributed's backends and stores."""


class DistBackendError(DistError):
    """A backend (MPI, NCCL) failed an operation."""


class DistNetworkError(DistError):
    """A network connection (a store's) failed."""


class DistStoreError(DistError):
    """A store operation failed or timed out."""
