"""``torch.library``: user-defined operators, run eagerly.

    @engine.library.custom_op("mylib::mysin", mutates_args=())
    def mysin(x: engine.Tensor) -> engine.Tensor:
        return engine.from_numpy(np.sin(x.numpy()))

    mysin.register_fake(lambda x: engine.empty_like(x))
    mysin.register_autograd(backward, setup_context=setup_context)
    engine.library.ops.mylib.mysin(x)          # torch.ops.mylib.mysin (engine.ops.mylib.mysin too)
    engine.library.opcheck(mysin, (x,))

Each call binds its arguments to the op's schema, runs the kernel for the inputs' device type and is one node in
the autograd graph. There is no dispatcher, tracing or compilation: fake functions serve ``opcheck`` only, and
``register_torch_dispatch``, ``triton_op`` and ``wrap_triton`` raise.
"""
import typing

from ._registry import OpNamespace, OpOverload, OpOverloadPacket, ops
from .custom_ops import CustomOpDef
from .lib import (Library, custom_op, define, fallthrough_kernel, get_kernel, impl, impl_abstract,
                  register_autocast, register_autograd, register_fake, register_kernel, register_torch_dispatch,
                  register_vmap, triton_op, wrap_triton)
from .opcheck import OpCheckError, get_ctx, opcheck
from .schema import infer_schema

device_types_t = typing.Optional[typing.Union[str, typing.Sequence[str]]]  # what ``device_types`` may be

__all__ = ["CustomOpDef", "Library", "OpCheckError", "OpNamespace", "OpOverload", "OpOverloadPacket",
           "custom_op", "define", "device_types_t", "fallthrough_kernel", "get_ctx", "get_kernel", "impl",
           "impl_abstract", "infer_schema", "opcheck", "ops", "register_autocast", "register_autograd",
           "register_fake", "register_kernel", "register_torch_dispatch", "register_vmap", "triton_op",
           "wrap_triton"]
