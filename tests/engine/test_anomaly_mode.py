"""Anomaly detection against PyTorch: the switches and their nesting, the error for a backward that returns NaN
(naming the node as each engine names its grad_fn, and the gradient's index), and the warning with the forward
traceback of a node whose backward fails."""
import warnings

import pytest
import torch

import engine


def _states(lib):
    return lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()


@pytest.mark.parametrize("lib", [engine, torch])
def test_switches_nest_and_restore_as_torchs(lib):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        detect = lib.autograd.detect_anomaly(check_nan=False)
    seen = [_states(lib)]
    with detect:
        seen.append(_states(lib))
        with lib.autograd.set_detect_anomaly(False):
            seen.append(_states(lib))
        seen.append(_states(lib))
    seen.append(_states(lib))
    lib.autograd.set_detect_anomaly(True, check_nan=False)
    seen.append(_states(lib))
    lib.set_anomaly_enabled(False)
    seen.append(_states(lib))
    assert seen == [(False, True), (True, False), (False, True), (True, False), (False, True), (True, False),
                    (False, True)]


def test_same_switch_states_as_torch():
    assert _states(engine) == _states(torch) == (False, True)


def test_detect_anomaly_decorates_a_function():
    with pytest.warns(UserWarning):
        @engine.autograd.detect_anomaly()
        def inside():
            return _states(engine)
    assert inside() == (True, True)
    assert _states(engine) == (False, True)


def _nan_error(lib, build):
    """The error (or None) of a backward that makes NaN, under anomaly detection."""
    x = lib.tensor([0.0, 1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            y = build(x)
            try:
                y.sum().backward()
            except RuntimeError as error:
                return y, str(error)
    return y, None


@pytest.mark.parametrize("build", [lambda x: (x * 0).sqrt() * 1.0, lambda x: x / x, lambda x: (x * 0).sqrt()],
                         ids=["mul_after_sqrt", "div", "sqrt"])
def test_nan_in_backward_raises_torchs_error_naming_the_node(build):
    ours_y, ours = _nan_error(engine, build)
    theirs_y, theirs = _nan_error(torch, build)
    assert (ours is None) == (theirs is None)
    if theirs is not None:
        # torch names nodes "MulBackward0", the engine's grad_fn "MulBackward": the same up to that suffix
        assert ours == theirs.replace("Backward0'", "Backward'")
        assert "returned nan values in its" in ours


def test_no_error_without_check_nan_or_outside_the_mode():
    x = engine.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with engine.autograd.detect_anomaly(check_nan=False):
            (x / x).sum().backward()
    x.grad = None
    (x / x).sum().backward()
    assert engine.isnan(x.grad).any()


class Fails(engine.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("broken backward")


def make_failing(x):
    return Fails.apply(x).sum()  # the line the warning must show


def test_an_error_in_a_backward_is_preceded_by_the_forward_traceback():
    x = engine.rand(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with engine.autograd.detect_anomaly():
            y = make_failing(x)
            with pytest.raises(ValueError, match="broken backward"):
                y.backward()
    messages = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    assert len(messages) == 1
    message = messages[0]
    assert message.startswith("Error detected in FailsBackward. Traceback of forward call that caused the error:")
    assert "in make_failing" in message and "Fails.apply(x).sum()" in message
    assert __file__ in message and "engine/autograd" not in message


def test_a_node_made_before_the_mode_warns_without_a_traceback():
    x = engine.rand(3, requires_grad=True)
    y = make_failing(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with engine.autograd.detect_anomaly(), pytest.raises(ValueError):
            y.backward()
    assert any("Error detected in FailsBackward. No forward pass information available" in str(w.message)
               for w in caught)


def test_off_the_nodes_keep_no_stack():
    x = engine.rand(3, requires_grad=True)
    assert not hasattr((x * 2).grad_fn, "_anomaly_stack")
    with pytest.warns(UserWarning):
        with engine.autograd.detect_anomaly():
            assert "test_anomaly_mode.py" in (x * 2).grad_fn._anomaly_stack
