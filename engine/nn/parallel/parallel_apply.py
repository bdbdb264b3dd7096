"""``nn.parallel.parallel_apply``: call each replica on its own inputs and return their outputs in order.

torch runs the calls in threads, one per GPU; here they run one after the other (on the CPU and on one GPU
there is nothing to overlap). An exception in a replica is raised again with the replica and device named,
as torch's."""
import traceback


def _call(module, input, kwargs):
    if not isinstance(input, (list, tuple)):
        input = (input,)
    return module(*input, **kwargs)


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``[modules[i](*inputs[i], **kwargs_tup[i]) for i]``; an input that is not a list or tuple is the one
    positional argument."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    kwargs_tup = ({},) * len(modules) if kwargs_tup is None else kwargs_tup
    devices = [None] * len(modules) if devices is None else devices
    if not len(modules) == len(kwargs_tup) == len(devices):
        raise AssertionError(f"expected {len(modules)} kwargs and devices, got {len(kwargs_tup)} and {len(devices)}")
    outputs = []
    for i, (module, input, kwargs, device) in enumerate(zip(modules, inputs, kwargs_tup, devices)):
        try:
            outputs.append(_call(module, input, kwargs))
        except Exception as error:
            message = (f"Caught {type(error).__name__} in replica {i} on device {device}.\nOriginal "
                       f"{traceback.format_exc()}")
            try:
                wrapped = type(error)(message)
            except Exception:
                raise error from None
            raise wrapped from error
    return outputs


__all__ = ["parallel_apply"]
