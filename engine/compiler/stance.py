"""``torch.compiler.set_stance``: how compiled callables behave for a while, as a function, a context manager or a
decorator.

Stances (torch's names): "default"; "force_eager" (every compiled callable runs its Python); "eager_on_recompile"
(a signature already traced replays its graph, a new one runs eagerly instead of being traced);
"fail_on_recompile" (a new signature of a callable that has traced one raises); "eager_then_compile" and
"aot_eager_then_compile" (a callable's first call runs eagerly, later ones are graphed). ``force_backend`` (with
"default"): ``"eager"``/``"aot_eager"`` run eagerly, ``"inductor"``/``"cudagraphs"`` as compiled.
"""
import functools

__all__ = ["STANCES", "current", "set_stance"]

STANCES = ("default", "eager_then_compile", "aot_eager_then_compile", "force_eager", "eager_on_recompile",
           "fail_on_recompile")


class _Stance:
    def __init__(self, stance="default", skip_guard_eval_unsafe=False, backend=None):
        self.stance, self.skip_guard_eval_unsafe, self.backend = stance, skip_guard_eval_unsafe, backend


_current = _Stance()


def current():
    """The stance in force: ``.stance`` (a name of ``STANCES``) and ``.backend`` (``force_backend``)."""
    return _current


def _set(stance):
    global _current
    from ._compile import is_compiling

    if is_compiling():
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    prior, _current = _current, stance
    return prior


class set_stance:
    """``torch.compiler.set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None)``: sets
    the stance now; as a context manager, for the block; as a decorator, for each call of the function (the
    stance from before is back in force once it is applied as a decorator)."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if stance not in STANCES:
            raise ValueError(f"invalid stance {stance!r}; expected one of {list(STANCES)}")
        self.stance = _Stance(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _set(self.stance)

    def __call__(self, fn):
        _set(self.prev)

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return with_stance

    def __enter__(self):
        _set(self.stance)

    def __exit__(self, *exc):
        _set(self.prev)

    def clone(self):
        """A new set_stance of the same stance (it sets it, as each set_stance does)."""
        return type(self)(self.stance.stance, force_backend=self.stance.backend)
