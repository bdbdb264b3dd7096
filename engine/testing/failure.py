"""A failed check inside ``assert_close``: the exception type and message to raise, and the item it concerns."""

__all__ = ["Failure"]


class Failure(Exception):
    """Carries ``type`` (the exception class to raise), ``msg`` and ``id`` (the path of keys and indices to the
    failing item of nested inputs) until ``assert_close`` turns it into the user's error with ``to_error``."""

    def __init__(self, type, msg, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        """The exception: ``msg`` when a string, else the generated message naming the item (passed through
        ``msg`` when it is a callable)."""
        if isinstance(msg, str):
            return self.type(msg)
        generated = self.msg
        if self.id:
            generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
        return self.type(msg(generated) if callable(msg) else generated)
