"""``check_sparse_tensor_invariants``: whether the sparse constructors check their indices by default."""


class check_sparse_tensor_invariants:
    """``torch.sparse.check_sparse_tensor_invariants``: a context manager (and global switch) whose setting the
    constructors read when not given ``check_invariants``."""

    _enabled = False

    def __init__(self, enable=True):
        self.setting = bool(enable)

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self.saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.setting

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self.saved
