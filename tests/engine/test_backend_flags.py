"""The switches scripts set unconditionally (``torch.backends.*``, matmul precision, deterministic
algorithms), against torch: the same defaults, the same exception types for wrong values, context
managers that restore, and the TF32 switch that ``set_float32_matmul_precision`` really moves."""
import warnings

import pytest
import torch

import engine


def _outcome(action):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("value", action())
    except Exception as e:
        return ("raised", type(e).__name__)


@pytest.fixture
def restore_flags():
    """Put every switch both libraries have back as it was."""
    names = [("backends.cudnn", n) for n in ("enabled", "benchmark", "deterministic", "allow_tf32")]
    names += [("backends.cuda.matmul", n) for n in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                                                    "allow_bf16_reduced_precision_reduction")]
    names += [("backends.mkldnn", n) for n in ("enabled", "deterministic")]

    def owner(lib, path):
        for part in path.split("."):
            lib = getattr(lib, part)
        return lib
    saved = {(lib, path, n): getattr(owner(lib, path), n) for lib in (torch, engine) for path, n in names}
    deterministic = {lib: (lib.are_deterministic_algorithms_enabled(), lib.is_deterministic_algorithms_warn_only_enabled())
                     for lib in (torch, engine)}
    yield
    for (lib, path, n), value in saved.items():
        setattr(owner(lib, path), n, value)
    for lib, (mode, warn_only) in deterministic.items():
        lib.use_deterministic_algorithms(mode, warn_only=warn_only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch complains when the legacy and new APIs were mixed
        torch.set_float32_matmul_precision("highest")
    engine.set_float32_matmul_precision("highest")


BOOL_FLAGS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
              ("cuda.matmul", "allow_tf32"), ("mkldnn", "enabled"), ("mkldnn", "deterministic")]


def _module(lib, path):
    module = lib.backends
    for part in path.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("path,name", BOOL_FLAGS, ids=[f"{p}.{n}" for p, n in BOOL_FLAGS])
def test_bool_switches_take_bools_only(restore_flags, path, name):
    for value in (1, "yes", None):
        assert _outcome(lambda: setattr(_module(engine, path), name, value)) == \
            _outcome(lambda: setattr(_module(torch, path), name, value)) == ("raised", "RuntimeError")
    for value in (True, False):
        setattr(_module(engine, path), name, value)
        assert getattr(_module(engine, path), name) is value


def test_defaults_are_torchs():
    for path, name in BOOL_FLAGS:
        if (path, name) == ("cudnn", "allow_tf32"):
            continue  # off here, on in torch: our convolutions are GEMMs, and TF32 stays opt-in
        assert getattr(_module(engine, path), name) == getattr(_module(torch, path), name), f"{path}.{name}"
    assert engine.backends.cudnn.allow_tf32 is False
    for name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(engine.backends.cuda.matmul, name) == getattr(torch.backends.cuda.matmul, name) is True
    assert engine.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    assert engine.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled() is False
    assert engine.is_deterministic_algorithms_warn_only_enabled() is False
    assert engine.backends.mps.is_available() == torch.backends.mps.is_available() is False
    assert engine.backends.mps.is_built() == torch.backends.mps.is_built() is False


@pytest.mark.parametrize("name", ["allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"])
def test_reduced_precision_reductions(restore_flags, name):
    for value in (1, "x", [], [True, False, True], [1]):
        assert _outcome(lambda: setattr(engine.backends.cuda.matmul, name, value)) == \
            _outcome(lambda: setattr(torch.backends.cuda.matmul, name, value)) == ("raised", "TypeError")
    for value in (False, (True,), [False, True], True):
        for lib in (torch, engine):
            setattr(lib.backends.cuda.matmul, name, value)
        assert getattr(engine.backends.cuda.matmul, name) == getattr(torch.backends.cuda.matmul, name)


def test_unknown_matmul_switch_is_an_attribute_error():
    for lib in (torch, engine):
        with pytest.raises(AttributeError):
            lib.backends.cuda.matmul.alow_tf32 = True


def test_cudnn_flags_context_sets_torchs_values_and_restores(restore_flags):
    for lib in (torch, engine):
        lib.backends.cudnn.benchmark = True
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    before = [getattr(engine.backends.cudnn, n) for n in names]
    with engine.backends.cudnn.flags(), torch.backends.cudnn.flags():
        inside = [getattr(engine.backends.cudnn, n) for n in names]
        assert inside == [getattr(torch.backends.cudnn, n) for n in names]
        assert engine.backends.cudnn.allow_tf32 and engine.backends.cuda.tf32.convolution.allow_tf32
    assert [getattr(engine.backends.cudnn, n) for n in names] == before
    with pytest.raises(RuntimeError, match="enabled expects a bool"):
        with engine.backends.cudnn.flags(enabled="x"):
            pass
    assert [getattr(engine.backends.cudnn, n) for n in names] == before
    with engine.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=True, allow_tf32=False):
        assert [getattr(engine.backends.cudnn, n) for n in names] == [True, True, True, False]
    assert engine.backends.cudnn.is_available() is False and engine.backends.cudnn.version() is None


def test_mkldnn_flags(restore_flags):
    with engine.backends.mkldnn.flags(enabled=False, deterministic=True):
        assert engine.backends.mkldnn.enabled is False and engine.backends.mkldnn.deterministic is True
    assert engine.backends.mkldnn.enabled is True and engine.backends.mkldnn.deterministic is False
    assert engine.backends.mkldnn.is_available() is False


def test_opt_einsum_switches_as_torch_with_opt_einsum_installed():
    opt = engine.backends.opt_einsum
    assert opt.is_available() and opt.enabled is True and opt.strategy == "auto"
    with opt.flags(strategy="greedy"):
        assert opt.strategy == "greedy"
    assert opt.strategy == "auto"
    with pytest.raises(ValueError, match=r"must be one of the following: \[auto, greedy, optimal\] but is fast"):
        opt.strategy = "fast"
    with opt.flags(enabled=False):
        with pytest.raises(ValueError, match="opt_einsum is not enabled"):
            opt.strategy = "optimal"
    assert opt.enabled is True and opt.strategy == "auto"


def test_float32_matmul_precision_moves_tf32(restore_flags):
    for value in ("high", "medium", "highest"):
        for lib in (torch, engine):
            lib.set_float32_matmul_precision(value)
        assert engine.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == value
        assert engine.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32 == (value != "highest")
    for value in ("HIGH", "low"):
        for lib in (torch, engine):
            with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
                lib.set_float32_matmul_precision(value)
        assert engine.get_float32_matmul_precision() == "highest"
    assert _outcome(lambda: engine.set_float32_matmul_precision(1)) == \
        _outcome(lambda: torch.set_float32_matmul_precision(1)) == ("raised", "RuntimeError")
    engine.backends.cuda.matmul.allow_tf32 = True  # the legacy switch, as torch reads it
    assert engine.get_float32_matmul_precision() == "high"


def test_deterministic_algorithms(restore_flags):
    for lib in (torch, engine):
        lib.use_deterministic_algorithms(True, warn_only=True)
    for query in ("are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled"):
        assert getattr(engine, query)() == getattr(torch, query)() is True
    for lib in (torch, engine):
        lib.use_deterministic_algorithms(mode=False)
    assert engine.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled() is False
    assert engine.is_deterministic_algorithms_warn_only_enabled() is False
    for call in (lambda lib: lib.use_deterministic_algorithms("x"), lambda lib: lib.use_deterministic_algorithms(1),
                 lambda lib: lib.use_deterministic_algorithms(True, warn_only=1),
                 lambda lib: lib.use_deterministic_algorithms(True, True)):
        assert _outcome(lambda: call(engine)) == _outcome(lambda: call(torch)) == ("raised", "TypeError")
