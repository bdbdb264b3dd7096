"""Linear algebra with PyTorch semantics: matmul (all broadcasting cases), mm, bmm, mv, dot, outer,
addmm, baddbmm, einsum, tensordot, inverse, det.

Products go to BLAS through the device's ``gemm`` kernels (``backends.kernels(x, "gemm")``: numpy's or CuPy's
matmul, and cuBLAS directly while a CUDA graph is captured); a batched operand times a matrix is folded into
one GEMM.
Shape errors use PyTorch's wording and name both shapes.
"""
import math
import string

import numpy as np

from .. import _dtype, _layout, backends
from ..amp import autocast_mode
from ..autograd.function import Function
from ..autograd.graph import sum_to_shape
from ..autograd.double_backward import constant, sum_to_shape as sum_to_shape_tensor
from ..tensor import Tensor, register_method
from ._common import as_operand, cast, result_dtype, wrap_dim, xp_of
from .complex_grad import holomorphic, holomorphic_tensors
from .linalg_out import write_result, writes_out, writes_out_castable


# ---- products of arrays ------------------------------------------------------------------------
def _mm(x, y):
    """``x @ y`` with a batched ``x`` and a matrix ``y`` folded into one GEMM (one autocast covers: bfloat16
    operands inside ``nn.Graph`` with ``config.enable_amp`` on the GPU)."""
    matmul = backends.kernels(x, "gemm").autocast_matmul
    if y.ndim == 2 and x.ndim > 2:
        return matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), y).reshape(x.shape[:-1] + y.shape[-1:])
    return matmul(x, y)


def _t(x):
    return x.swapaxes(-1, -2)


def _matmul_grads(a, b, g, needs):
    """Gradients of ``a @ b`` (both at least 2-D) for upstream ``g``, reduced to each operand's shape."""
    ga = gb = None
    if needs[0]:
        ga = sum_to_shape(_mm(g, _t(b)), a.shape)
    if needs[1]:
        if b.ndim == 2 and a.ndim > 2:
            rows = math.prod(a.shape[:-1])
            gb = _mm(a.reshape(rows, a.shape[-1]).T, g.reshape(rows, g.shape[-1]))
        else:
            gb = sum_to_shape(_mm(_t(a), g), b.shape)
    return ga, gb


class MatMul(Function):
    """torch.matmul on arrays: 1-D operands act as a row/column and their dim is dropped."""

    def forward(self, a, b):
        self.a, self.b = a, b
        return _mm(a, b)

    @holomorphic
    def backward(self, g):
        a, b = self.a, self.b
        xp = xp_of(g)
        if b.ndim == 1:
            g = g[..., None]
        if a.ndim == 1:
            g = xp.expand_dims(g, -2)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        ga, gb = _matmul_grads(a2, b2, g, self.needs_input_grad)
        return (None if ga is None else ga.reshape(a.shape),
                None if gb is None else gb.reshape(b.shape))

    def backward_tensors(self, g):
        a, b = self.saved_input(0, self.a), self.saved_input(1, self.b)
        if b.ndim == 1:
            g = g.unsqueeze(-1)
        if a.ndim == 1:
            g = g.unsqueeze(-2)
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = sum_to_shape_tensor(g.matmul(b2.mH), tuple(a2.shape)).reshape(tuple(a.shape))
        if self.needs_input_grad[1]:
            gb = sum_to_shape_tensor(a2.mH.matmul(g), tuple(b2.shape)).reshape(tuple(b.shape))
        return ga, gb


class AddMatMul(Function):
    """``beta * c + alpha * (a @ b)`` for matrices (addmm) and batches (baddbmm)."""

    def __init__(self, beta, alpha, ignores_product=False):
        self.beta, self.alpha, self.ignores_product = beta, alpha, ignores_product

    def forward(self, c, a, b):
        self.a, self.b = a, b
        if self.alpha == 0 and self.ignores_product:  # BLAS's gemm (addmm) reads no operand then
            y = xp_of(a).zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
        else:
            y = _mm(a, b)
        if self.alpha != 1:
            y *= self.alpha
        if self.beta != 0:
            y += cast(c, y.dtype) if self.beta == 1 else self.beta * cast(c, y.dtype)
        return y

    @holomorphic
    def backward(self, g):
        gc = g * self.beta if self.needs_input_grad[0] else None
        ga, gb = _matmul_grads(self.a, self.b, g * self.alpha if self.alpha != 1 else g,
                               self.needs_input_grad[1:])
        return gc, ga, gb

    @holomorphic_tensors
    def backward_tensors(self, g):
        gc = g * self.beta if self.needs_input_grad[0] else None
        a, b = self.saved_input(1, self.a), self.saved_input(2, self.b)
        g = g * self.alpha if self.alpha != 1 else g
        ga = g.matmul(b.transpose(-1, -2)) if self.needs_input_grad[1] else None
        gb = a.transpose(-1, -2).matmul(g) if self.needs_input_grad[2] else None
        return gc, ga, gb


class Outer(Function):
    def __init__(self, dtype):
        self.dtype = dtype.np

    def forward(self, a, b):
        self.a, self.b = cast(a, self.dtype), cast(b, self.dtype)
        return self.a[:, None] * self.b[None, :]

    @holomorphic
    def backward(self, g):
        return g @ self.b, self.a @ g

    @holomorphic_tensors
    def backward_tensors(self, g):
        return g.matmul(self.saved_input(1, self.b)), self.saved_input(0, self.a).matmul(g)


# ---- shape and dtype checks with PyTorch's messages ---------------------------------------------
_BOOL_KERNELS = {"dot": "dot", "addmv": "addmv_impl_cpu", "addmm": "addmm_impl_cpu_", "bmm": "bmm"}


def _kernel(a, b):
    """The kernel PyTorch's matmul sends operands of these ranks to (its dtype checks and messages)."""
    if b.ndim == 1:
        return "dot" if a.ndim == 1 else "addmv"
    return "addmm" if b.ndim == 2 else "bmm"


def _check_dtypes(a, b, kernel="addmm", empty=False):
    """``kernel``'s checks that ``a`` and ``b`` share a dtype and that it is not bool (which an ``empty`` product,
    one with no term or no element, skips but dot's)."""
    if kernel == "bmm" and a.dtype is _dtype.bool_ and not empty:  # its kernel is chosen by a's dtype first
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    if a.dtype is not b.dtype:
        ta, tb = a.dtype.title, b.dtype.title
        raise RuntimeError({
            "dot": f"dot : expected both vectors to have same dtype, but found {ta} and {tb}",
            "addmv": f"addmv input tensors must have the same dtype, but got {tb}, {ta}, and {tb}",
            "addmm": f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_name(a.dtype)} != "
                     f"{_dtype.cpp_name(b.dtype)}",
            "bmm": f"expected scalar type {ta} but found {tb}"}[kernel])
    if a.dtype is _dtype.bool_ and (kernel == "dot" or not empty):
        raise NotImplementedError(f"\"{_BOOL_KERNELS[kernel]}\" not implemented for 'Bool'")


def _is_empty_product(a, b):
    """Whether ``a @ b`` has no element or sums no term (PyTorch then runs no kernel)."""
    others = tuple(b.shape[:-2]) + tuple(b.shape[-1:]) if b.ndim > 1 else ()
    return 0 in tuple(a.shape) + others


def _integral_scalars(dtype, *scalars):
    """PyTorch's BLAS-backed ops take ``beta`` and ``alpha`` as the result's type: for integers truncated, and
    wrapped into its range (-1 is 255 for uint8; bool: whether nonzero)."""
    if dtype.is_floating_point or dtype.is_complex:
        return scalars
    return tuple(np.array(int(x)).astype(dtype.np).item() for x in scalars)


def _mat_error(rows, k1, k2, m):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k1} and {k2}x{m})")


def _broadcast_batch(sa, sb):
    """The broadcast of two batch shapes, with PyTorch's error naming the mismatching dim."""
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i}")
        out.append(y if x == 1 else x)  # a size 1 stretches, to 0 too
    return tuple(out)


def _check_matmul(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {len(sa)}D and "
                           f"{len(sb)}D")
    if len(sa) == 1 and len(sb) == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
                               f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
    elif len(sb) == 1:
        if sa[-1] != sb[0]:
            rows = math.prod(sa[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{sa[-1]}), vec ({sb[0]})")
    elif len(sb) == 2:
        if sa[-1] != sb[0]:
            raise _mat_error(math.prod(sa[:-1]), sa[-1], sb[0], sb[1])
    else:
        batch = math.prod(_broadcast_batch(sa[:-2], sb[:-2]))
        if sa[-1] != sb[-2]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {sa[-1]}] "
                               f"but got: [{batch}, {sb[-2]}].")


# ---- public products ---------------------------------------------------------------------------
@autocast_mode.lower_precision("cpu", "cuda")
def matmul(input, other, *, out=None):
    """Matrix product with NumPy/PyTorch broadcasting: dot, mv, mm and batched forms."""
    if input.layout is not _layout.strided:  # a sparse matrix (engine.sparse) multiplies itself
        return input.matmul(other)
    if other.layout is not _layout.strided and input.ndim == 2 and other.ndim == 2:  # dense @ sparse, dense
        return other.t().matmul(input.t()).t()
    _check_matmul(input, other)
    kernel, empty = _kernel(input, other), _is_empty_product(input, other)
    if out is not None and out.dtype is not input.dtype:  # checked before the operands and the kernel
        raise RuntimeError(f"Expected out tensor to have dtype {_dtype.cpp_name(input.dtype)}, but got "
                           f"{_dtype.cpp_name(out.dtype)} instead")
    if kernel == "bmm" and empty and input.dtype is not other.dtype:
        input = input.to(other.dtype)  # an empty bmm checks nothing and takes its second operand's dtype
    _check_dtypes(input, other, kernel, empty)
    return write_result(MatMul()(input, other), out, exact=True)


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def mm(input, mat2):
    """Product of two matrices."""
    if input.layout is not _layout.strided:  # a sparse matrix (engine.sparse) multiplies itself
        return input.mm(mat2)
    if mat2.layout is not _layout.strided and input.ndim == 2 and mat2.ndim == 2:  # dense @ sparse, dense
        return mat2.t().mm(input.t()).t()
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def bmm(input, mat2):
    """Batched product of two 3-D tensors with equal batch sizes."""
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if mat2.shape[0] != input.shape[0] or mat2.shape[1] != input.shape[2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return matmul(input, mat2)


@autocast_mode.lower_precision("cuda")
@writes_out
def mv(input, vec):
    """Matrix times vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return matmul(input, vec)


@autocast_mode.as_given
@writes_out
def dot(input, other):
    """Inner product of two 1-D tensors."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype.title} and "
                           f"{other.dtype.title}")
    return matmul(input, other)


@writes_out_castable
def outer(input, vec2):
    """Outer product of two 1-D tensors (``ger``)."""
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return Outer(result_dtype(input, vec2))(input, vec2)


ger = outer


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` expands to the product's shape, ``beta == 0`` ignores
    it and ``alpha == 0`` the product (NaN included, as BLAS)."""
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    input = as_operand(input)
    for name, m in (("self", input), ("mat1", mat1)):
        if m.dtype is not mat2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {m.dtype.title} and "
                               f"{mat2.dtype.title}")
    if mat1.shape[1] != mat2.shape[0]:
        raise _mat_error(mat1.shape[0], mat1.shape[1], mat2.shape[0], mat2.shape[1])
    _check_dtypes(mat1, mat2, "addmm", empty=0 in (mat1.shape[0], mat2.shape[1]))  # (no element: no kernel)
    beta, alpha = _integral_scalars(mat1.dtype, beta, alpha)
    c = input.expand(mat1.shape[0], mat2.shape[1])
    return AddMatMul(beta, alpha, ignores_product=True)(c, mat1, mat2)


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)`` (``beta == 0`` ignores input, NaN included)."""
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    input = as_operand(input)
    if input.dtype is not batch1.dtype:
        names = (_dtype.cpp_name(t.dtype) for t in (input, batch1, batch2))
        raise RuntimeError("Input dtypes must be the same, got: input {}, batch1: {}, batch2: {}".format(*names))
    if batch2.shape[0] != batch1.shape[0] or batch2.shape[1] != batch1.shape[2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    empty = 0 in (batch1.shape[0], batch1.shape[1], batch2.shape[2])  # no element: no kernel
    if batch1.dtype is _dtype.bool_ and not empty:
        raise NotImplementedError("\"baddbmm\" not implemented for 'Bool'")
    _check_dtypes(batch1, batch2, "bmm", empty)
    beta, alpha = _integral_scalars(batch1.dtype, beta, alpha)
    c = input.expand(batch1.shape[0], batch1.shape[1], batch2.shape[2])
    return AddMatMul(beta, alpha)(c, batch1, batch2)


# ---- einsum, tensordot -------------------------------------------------------------------------
def _parse_operands(lhs, count):
    """The labels of each of ``count`` operands in ``lhs`` ('...' kept as one item), with PyTorch's checks in
    its order (the index in a message counts spaces)."""
    labels = [[]]
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            k = len(labels) - 1
            if "..." in labels[-1]:
                raise RuntimeError(f"einsum(): found '.' for operand {k} for which an ellipsis was already found")
            if lhs[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {k} that is not part of any ellipsis")
            labels[-1].append("...")
            i += 2
        elif c == ",":
            labels.append([])
            if len(labels) > count:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
        elif c != " ":
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
            labels[-1].append(c)
        i += 1
    if len(labels) != count:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    return labels


def _parse_output(rhs, offset, counts):
    """The output's labels ('...' one item) from ``rhs`` (at ``offset`` in the equation), each seen in an input
    and at most once here."""
    out = []
    i = 0
    while i < len(rhs):
        c = rhs[i]
        if c == ".":
            if "..." in out:
                raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
            if rhs[i:i + 3] != "...":
                raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
            out.append("...")
            i += 2
        elif c != " ":
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index {offset + i} in the equation "
                                   "string, subscripts must be in [a-zA-Z]")
            if c in out or not counts.get(c):
                reason = "appears more than once in the output" if c in out else \
                    "does not appear in the equation for any input operand"
                raise RuntimeError(f"einsum(): output subscript {c} {reason}")
            out.append(c)
        i += 1
    return out


def _parse_einsum(equation, shapes):
    """PyTorch's reading of an einsum equation, its errors included: each operand's subscripts and the output's
    as strings of letters, '...' spelled out in spare letters (right-aligned, so that ellipsis dims broadcast),
    each letter's size and the ellipsis's letters."""
    lhs, arrow, rhs = equation.partition("->")
    labels = _parse_operands(lhs, len(shapes))
    counts = {}
    n_ell = 0
    for i, (ls, shape) in enumerate(zip(labels, shapes)):
        n = len(ls) - ("..." in ls)
        for c in ls:
            counts[c] = counts.get(c, 0) + (c != "...")
        if "..." in ls:
            n_ell = max(n_ell, len(shape) - n)
            if n > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is more than the "
                                   f"number of dimensions ({len(shape)}) for operand {i}")
        elif n != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {i} and no ellipsis was given")
    out = _parse_output(rhs, len(lhs) + 2, counts) if arrow else None
    ell = "".join([c for c in string.ascii_letters if c not in counts][:n_ell])
    sizes, ell_sizes, subs = {}, [1] * n_ell, []
    for i, (ls, shape) in enumerate(zip(labels, shapes)):
        sub, dim = "", 0
        for c in ls:
            if c == "...":
                covered = len(shape) - len(ls) + 1
                for j in range(n_ell - covered, n_ell):
                    n = shape[dim]
                    if n != 1:
                        if ell_sizes[j] not in (1, n):
                            raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has "
                                               f"size {n} which does not broadcast with previously seen ellipsis "
                                               f"with size {ell_sizes[j]} for the respective dimension")
                        ell_sizes[j] = n
                    sub += ell[j]
                    dim += 1
                continue
            n = shape[dim]
            if c in sub:
                first = shape[sub.index(c)]
                if n != first:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {n} != {first}")
            elif n != 1:
                if sizes.get(c, 1) not in (1, n):
                    raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not "
                                       f"broadcast with previously seen size {sizes[c]}")
                sizes[c] = n
            sizes.setdefault(c, 1)
            sub += c
            dim += 1
        subs.append(sub)
    sizes.update(zip(ell, ell_sizes))
    if out is None:
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    else:
        out = "".join(ell if c == "..." else c for c in out)
    return subs, out, sizes, ell


def _sum_type(dtype):
    """The dtype of ``sum`` over some dims: integers and bool widen to int64."""
    return dtype if dtype.is_floating_point or dtype.is_complex else _dtype.int64


def _einsum_dtype(subs, out, sizes, ell, shapes, dtypes):
    """The result dtype of PyTorch's einsum, which contracts left to right: a label only one operand still holds
    is summed in it (integers widen to int64), a pair with no common contracted label multiplies (promoting),
    and one with common ones goes through ``bmm`` (which wants one dtype and refuses bool): its errors too."""
    operands = [({**dict.fromkeys(sizes, 1), **dict(zip(sub, shape))}, dt)
                for sub, shape, dt in zip(subs, shapes, dtypes)]
    contracted = [c for c in sizes if c not in out]
    if len(operands) == 1:
        return _sum_type(dtypes[0]) if contracted else dtypes[0]
    counts = {c: sum(op[c] != 1 for op, _ in operands) for c in contracted}
    order = list(out) + [c for c in ell if c in contracted] + sorted(c for c in contracted if c not in ell)
    while len(operands) > 1:
        (a, ta), (b, tb) = operands[:2]
        summed, alone_a, alone_b = [], False, False
        for c in contracted:
            if a[c] != 1 and b[c] != 1:
                counts[c] -= 1
                if counts[c] == 1:
                    summed.append(c)
                    counts[c] = 0
            elif counts[c] == 1 and (a[c] != 1 or b[c] != 1):
                alone_a, alone_b = alone_a or a[c] != 1, alone_b or a[c] == 1
                (a if a[c] != 1 else b)[c] = 1
                counts[c] = 0
        ta, tb = (_sum_type(ta) if alone_a else ta), (_sum_type(tb) if alone_b else tb)
        joint = {c: b[c] if a[c] == 1 else a[c] for c in sizes}  # a size 1 broadcasts, to 0 too
        own_a = [c for c in order if c not in summed and a[c] != 1 and b[c] == 1]
        own_b = [c for c in order if c not in summed and a[c] == 1]  # (dims of size 1 in both count as b's)
        if summed and own_b and own_a and order.index(own_a[-1]) > order.index(own_b[-1]):
            ta, tb = tb, ta  # PyTorch multiplies b^T a^T then, for a result whose last dim is a's
        if not summed:
            dtype = _dtype.promote_types(ta, tb)
        elif not (math.prod(joint[c] for c in sizes if c not in summed) and math.prod(a[c] for c in summed)):
            dtype = tb  # an empty bmm checks nothing and takes its second operand's dtype
        elif ta is _dtype.bool_:
            raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
        elif ta is not tb:
            raise RuntimeError(f"expected scalar type {ta.title} but found {tb.title}")
        else:
            dtype = ta
        result = {c: 1 if c in summed else joint[c] for c in sizes}
        operands[:2] = [(result, dtype)]
    return operands[0][1]


def _sublist_equation(args):
    """``einsum(op, sublist, op, sublist, ..., [output sublist])``: the equation and the operands (integers 0-25
    name 'A'-'Z', 26-51 'a'-'z', and ``...`` an ellipsis)."""
    def letters(sublist):
        spelled = ""
        for n in sublist:
            if n is Ellipsis:
                spelled += "..."
            elif 0 <= n < 52:
                spelled += string.ascii_letters[(n + 26) % 52]
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return spelled
    equation = ",".join(letters(s) for s in args[1::2])
    if len(args) % 2:
        return equation + "->" + letters(args[-1]), args[:-1:2]
    return equation, args[::2]


def _reduce_operand(sub, a, keep, xp):
    """Operand ``a`` (subscripts ``sub``) with each repeated letter taken on its diagonal and the letters not in
    ``keep`` summed out: (its subscripts, the array)."""
    while True:
        repeated = next((c for c in sub if sub.count(c) > 1), None)
        if repeated is None:
            break
        i = sub.index(repeated)
        j = sub.index(repeated, i + 1)
        a = xp.diagonal(a, axis1=i, axis2=j)  # the diagonal becomes the last axis
        sub = sub[:i] + sub[i + 1:j] + sub[j + 1:] + repeated
    summed = tuple(k for k, c in enumerate(sub) if c not in keep)
    if summed:
        a = a.sum(axis=summed)
        sub = "".join(c for c in sub if c in keep)
    return sub, a


def _contract_pair(sa, a, sb, b, keep, matmul, xp):
    """The product of operands ``a`` (subscripts ``sa``) and ``b`` (``sb``), letters in both summed unless in
    ``keep``, as one batched GEMM: (batch, a's own, summed) @ (batch, summed, b's own), size-1 letters broadcast."""
    batch = [c for c in sa if c in sb and c in keep]
    summed = [c for c in sa if c in sb and c not in keep]
    own_a = [c for c in sa if c not in sb]
    own_b = [c for c in sb if c not in sa]
    size = dict(zip(sb, b.shape))
    for c, n in zip(sa, a.shape):
        size[c] = max(n, size.get(c, 1))

    def laid_out(sub, x, order):
        x = xp.broadcast_to(x.transpose([sub.index(c) for c in order]), tuple(size[c] for c in order))
        return xp.ascontiguousarray(x)

    def count(letters):
        return math.prod(size[c] for c in letters)
    a = laid_out(sa, a, batch + own_a + summed).reshape(count(batch), count(own_a), count(summed))
    b = laid_out(sb, b, batch + summed + own_b).reshape(count(batch), count(summed), count(own_b))
    letters = batch + own_a + own_b
    return "".join(letters), matmul(a, b).reshape(tuple(size[c] for c in letters))


def _contract(eq, *arrays):
    """``einsum(eq, *arrays)`` (an explicit ``->`` equation) of arrays: numpy's optimized einsum on the CPU; on the
    GPU the operands contracted left to right, each pair as one batched GEMM through the device's ``gemm`` kernel
    (CuPy's einsum calls cuBLAS itself, which a CUDA graph capture refuses; the kernel then goes through our
    cuBLAS binding)."""
    xp = xp_of(*arrays)
    if xp is np:
        return np.asarray(np.einsum(eq, *arrays, optimize=True))
    lhs, out = eq.split("->")
    terms = list(zip(lhs.split(","), arrays))
    matmul = backends.kernels(arrays[0], "gemm").matmul
    sub, a = terms[0]
    for k in range(1, len(terms)):
        sb, b = terms[k]
        keep = set(out).union(*[set(s) for s, _ in terms[k + 1:]])
        sub, a = _reduce_operand(sub, a, keep | set(sb), xp)
        sb, b = _reduce_operand(sb, b, keep | set(sub), xp)
        sub, a = _contract_pair(sub, a, sb, b, keep, matmul, xp)
    sub, a = _reduce_operand(sub, a, set(out), xp)
    a = a.transpose([sub.index(c) for c in out])
    return xp.ascontiguousarray(a).reshape(a.shape)  # (ascontiguousarray makes a 0-d result 1-d)


class Einsum(Function):
    """Einstein summation; each operand's gradient is another einsum of the upstream gradient."""

    def __init__(self, subs, out, sizes, dtype):
        self.subs, self.out, self.sizes, self.dtype = subs, out, sizes, dtype.np

    def forward(self, *arrays):
        self.arrays = [cast(a, self.dtype) for a in arrays]
        eq = ",".join(self.subs) + "->" + self.out
        return _contract(eq, *self.arrays)

    @holomorphic
    def backward(self, g):
        return tuple(self._grad(i, g) if need else None for i, need in enumerate(self.needs_input_grad))

    def _grad(self, i, g):
        """d/d operand i: contract g with the other operands; ones/identity restore lost letters."""
        xp = xp_of(g)
        eq, extra = self._grad_equation(i, xp, g.dtype)
        grad = _contract(eq, g, *[a for j, a in enumerate(self.arrays) if j != i], *extra)
        shape = self.arrays[i].shape
        summed = tuple(k for k, (n, m) in enumerate(zip(shape, grad.shape)) if n == 1 and m != 1)
        if summed:
            grad = grad.sum(summed, keepdims=True)
        return xp.broadcast_to(grad, shape)

    def _grad_equation(self, i, xp, dtype):
        """The equation of operand i's gradient (terms: the output gradient, the other operands in order, then
        the returned identity/ones arrays that restore its repeated or lost letters)."""
        target = self.subs[i]
        others = [s for j, s in enumerate(self.subs) if j != i]
        seen = set(self.out).union(*[set(s) for s in others])
        spare = iter(c for c in string.ascii_letters if c not in self.sizes)
        full, extra = [], []
        for c in target:
            n = self.sizes[c]
            if c in full:
                fresh = next(spare)
                extra.append((c + fresh, xp.eye(n, dtype=dtype)))
                full.append(fresh)
                continue
            if c not in seen and target.count(c) == 1:
                extra.append((c, xp.ones(n, dtype)))
            full.append(c)
        subs = [self.out] + others + [s for s, _ in extra]
        return ",".join(subs) + "->" + "".join(full), [a for _, a in extra]

    @holomorphic_tensors
    def backward_tensors(self, g):
        """Each gradient the same einsum of the output gradient and the other (graph-connected) operands."""
        xp = xp_of(g._data)
        inputs = [self.saved_input(j, a) for j, a in enumerate(self.arrays)]
        grads = []
        for i, need in enumerate(self.needs_input_grad):
            if not need:
                grads.append(None)
                continue
            eq, extra = self._grad_equation(i, xp, g._data.dtype)
            grad = einsum(eq, g, *[t for j, t in enumerate(inputs) if j != i], *[constant(a) for a in extra])
            shape = self.arrays[i].shape
            summed = tuple(k for k, (n, m) in enumerate(zip(shape, grad.shape)) if n == 1 and m != 1)
            grads.append((grad.sum(summed, keepdim=True) if summed else grad).expand(shape))
        return tuple(grads)


@autocast_mode.lower_precision("cpu", "cuda")
def einsum(*args):
    """Einstein summation, ``einsum(equation, *operands)`` (or the operands in one list) or the sublist form
    ``einsum(op1, sublist1, op2, sublist2, ..., [output])``: PyTorch's parsing, errors and result dtype,
    computed with optimized contraction."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        return einsum(equation, *operands[0])
    shapes = [tuple(t.shape) for t in operands]
    subs, out, sizes, ell = _parse_einsum(equation, shapes)
    dtype = _einsum_dtype(subs, out, sizes, ell, shapes, [t.dtype for t in operands])
    return Einsum(subs, out, sizes, dtype)(*operands)


def _contracted_broadcast(x, dims_x, other, dims_other):
    """``x`` expanded where a contracted dim of size 1 meets a partner of another size (torch broadcasts it)."""
    shape = list(x.shape)
    for dx, do in zip(dims_x, dims_other):
        if shape[dx] == 1:
            shape[dx] = other.shape[do]
    return x if shape == list(x.shape) else x.expand(shape)


def _tensordot_dims(dims, a, b):
    """The two lists of contracted dims from ``dims`` (an int: a's last and b's first that many), checked as
    PyTorch checks them, in its order."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise ValueError("too many values to unpack (expected 2)" if len(dims) > 2 else
                             f"not enough values to unpack (expected 2, got {len(dims)})")
        for k, (name, d) in enumerate((("dims_self", dims[0]), ("dims_other", dims[1]))):
            if not isinstance(d, (list, tuple)):
                raise TypeError(f"tensordot(): argument '{name}' (position {k + 3}) must be tuple of ints, not "
                                f"{type(d).__name__}")
        return list(dims[0]), list(dims[1])
    if not isinstance(dims, int):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    if dims < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
    if dims > min(a.ndim, b.ndim):
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
    return list(range(-dims, 0)), list(range(dims))


@autocast_mode.policy(cpu=autocast_mode.LOWER, cuda=autocast_mode.PROMOTE)  # CPU: through mm, as torch's
@writes_out
def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or two explicit dim lists); one dtype, in
    which integers stay, and bool refused, as PyTorch's matrix product."""
    given_a, given_b = _tensordot_dims(dims, a, b)
    if len(given_a) != len(given_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a, dims_b = [], []
    for ga, gb in zip(given_a, given_b):
        da, db = wrap_dim(ga, a.ndim), wrap_dim(gb, b.ndim)
        for d, seen in ((da, dims_a), (db, dims_b)):
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        if a.shape[da] != b.shape[db] and 1 not in (a.shape[da], b.shape[db]):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {ga} "
                               f"and second has size {b.shape[db]} in dim {gb}")
        dims_a.append(da)
        dims_b.append(db)
    terms = math.prod(b.shape[e] if a.shape[d] == 1 else a.shape[d] for d, e in zip(dims_a, dims_b))
    kept = [n for d, n in enumerate(a.shape) if d not in dims_a] + [n for d, n in enumerate(b.shape) if d not in dims_b]
    _check_dtypes(a, b, "addmm", empty=not (terms and math.prod(kept)))
    a, b = _contracted_broadcast(a, dims_a, b, dims_b), _contracted_broadcast(b, dims_b, a, dims_a)
    letters = iter(string.ascii_letters)
    sub_a = [next(letters) for _ in range(a.ndim)]
    sub_b = [next(letters) for _ in range(b.ndim)]
    for da, db in zip(dims_a, dims_b):
        sub_b[db] = sub_a[da]
    out = [c for i, c in enumerate(sub_a) if i not in dims_a] + [c for i, c in enumerate(sub_b) if i not in dims_b]
    return einsum("".join(sub_a) + "," + "".join(sub_b) + "->" + "".join(out), a, b)


# ---- inverse, det, solve -----------------------------------------------------------------------
def _check_square(a, name):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        if a.ndim < 2:
            raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


class Inverse(Function):
    uses_inputs, uses_output = False, True

    def forward(self, a):
        self.y = xp_of(a).linalg.inv(a)
        return self.y

    @holomorphic
    def backward(self, g):
        yt = _t(self.y)
        return -(yt @ g @ yt)

    def backward_tensors(self, g):
        yt = self.saved_output(0, self.y).mT
        return -(yt @ g @ yt)


class Det(Function):
    """Determinant; the backward uses the inverse (nonsingular inputs)."""

    def forward(self, a):
        xp = xp_of(a)
        self.a = a
        self.y = xp.asarray(xp.linalg.det(a))
        return self.y

    @holomorphic
    def backward(self, g):
        inv_t = _t(xp_of(g).linalg.inv(self.a))
        return (g * self.y)[..., None, None] * inv_t

    def backward_tensors(self, g):
        y = self.saved_output(0, self.y)
        return (g * y)[..., None, None] * inverse(self.saved_input(0, self.a)).mT


class Solve(Function):
    """X with ``A @ X = B``; ``vector`` means B is a (batch of) vector(s)."""

    def __init__(self, vector):
        self.vector = vector

    def forward(self, a, b):
        xp = xp_of(a, b)
        b2 = b[..., None] if self.vector else b
        self.a = a
        self.x = xp.linalg.solve(a, xp.broadcast_to(b2, xp.broadcast_shapes(a.shape[:-2], b2.shape[:-2])
                                                    + b2.shape[-2:]))
        return self.x[..., 0] if self.vector else self.x

    @holomorphic
    def backward(self, g):
        xp = xp_of(g)
        g2 = g[..., None] if self.vector else g
        gb = xp.linalg.solve(_t(self.a), g2)
        ga = -gb @ _t(self.x) if self.needs_input_grad[0] else None
        return ga, (gb[..., 0] if self.vector else gb)

    def backward_tensors(self, g):
        g2 = g.unsqueeze(-1) if self.vector else g
        gb = solve(self.saved_input(0, self.a).mT, g2)
        ga = None
        if self.needs_input_grad[0]:
            x = self.saved_output(0, self.x[..., 0] if self.vector else self.x)
            ga = -gb @ (x.unsqueeze(-1) if self.vector else x).mT
        return ga, (gb.squeeze(-1) if self.vector else gb)


def inverse(input):
    """Inverse of a (batch of) square matrices: ``linalg.inv`` (its LinAlgError for a singular matrix, its complex
    gradient), which builds on this module and so is imported here when called."""
    from .linalg_solvers import inv
    return inv(input)


def det(input):
    """Determinant of a (batch of) square matrices: ``linalg.det`` (its dtype checks, its complex gradient),
    imported when called as ``inverse`` is."""
    from .linalg_solvers import det
    return det(input)


@autocast_mode.float32("cpu")
def solve(A, B, *, left=True):
    """``torch.linalg.solve``: X with A @ X = B (B a vector when it is 1-D or A's batch of vectors)."""
    if not left:
        raise NotImplementedError("linalg.solve: left=False is not supported")
    _check_square(A, "linalg.solve")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return Solve(vector)(A, B)


def _rmatmul(self, other):
    return matmul(as_operand(other, like=self), self)


for _fn in (matmul, mm, bmm, mv, dot, outer, addmm, baddbmm, inverse, det):
    register_method(_fn)
register_method(outer, "ger")
register_method(matmul, "__matmul__")
register_method(_rmatmul, "__rmatmul__")

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "outer", "ger", "addmm", "baddbmm", "einsum", "tensordot",
           "inverse", "det"]
