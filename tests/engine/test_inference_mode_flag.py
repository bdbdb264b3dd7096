"""``is_inference_mode_enabled`` and inference tensors against PyTorch: the flag told apart from ``no_grad``
through nesting, which tensors are inference tensors, and torch's errors when one is saved for a backward or
written in place outside the mode."""
import pytest
import torch

import engine


def _flags(lib):
    return lib.is_grad_enabled(), lib.is_inference_mode_enabled()


def _nesting(lib):
    seen = [_flags(lib)]
    with lib.no_grad():
        seen.append(_flags(lib))
        with lib.inference_mode(False):
            seen.append(_flags(lib))
    with lib.inference_mode():
        seen.append(_flags(lib))
        with lib.inference_mode(False):
            seen.append(_flags(lib))
        with lib.enable_grad():
            seen.append(_flags(lib))
        with lib.no_grad():
            seen.append(_flags(lib))
        seen.append(_flags(lib))

    @lib.inference_mode()
    def decorated():
        return _flags(lib)

    seen.append(decorated())
    seen.append(_flags(lib))
    return seen


def test_the_flag_through_nesting_as_torchs():
    assert _nesting(engine) == _nesting(torch)
    assert engine.autograd.is_inference_mode_enabled() is False


CASES = {
    "factory": lambda lib, w: lib.ones(3),
    "random": lambda lib, w: lib.rand(2),
    "range": lambda lib, w: lib.arange(3),
    "from_data": lambda lib, w: lib.tensor([1.0]),
    "op_on_normal": lambda lib, w: w * 2,
    "view_of_normal": lambda lib, w: w.view(3),
    "detach_of_normal": lambda lib, w: w.detach(),
    "clone_of_normal": lambda lib, w: w.clone(),
    "view_of_inference": lambda lib, w: lib.ones(4).view(2, 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_which_tensors_are_inference_tensors(name):
    def made(lib):
        w = lib.ones(3, requires_grad=True)
        with lib.inference_mode():
            inside = CASES[name](lib, w)
        with lib.no_grad():
            under_no_grad = CASES[name](lib, w)
        return inside.is_inference(), under_no_grad.is_inference()

    assert made(engine) == made(torch)


def _errors(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        x = lib.ones(3)
    results = []
    for action in (lambda: w * x, lambda: w + x, lambda: x.add_(1), lambda: x.clone().add_(1), lambda: x * 2):
        try:
            action()
            results.append(None)
        except RuntimeError as error:
            results.append(str(error).split(".")[0])
    with lib.inference_mode():
        x.add_(1)  # in place inside the mode: allowed
    return results


def test_torchs_errors_for_inference_tensors_outside_the_mode():
    ours = _errors(engine)
    assert ours == _errors(torch)
    assert ours[0] == "Inference tensors cannot be saved for backward"
    assert ours[2] == "Inplace update to inference tensor outside InferenceMode is not allowed"


def test_a_clone_is_an_ordinary_tensor_for_autograd():
    w = engine.ones(3, requires_grad=True)
    with engine.inference_mode():
        x = engine.full((3,), 2.0)
    (w * x.clone()).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
