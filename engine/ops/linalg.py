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
from ._common import as_operand, cast, result_dtype, xp_of
from .complex_grad import holomorphic
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

    def __init__(self, beta, alpha):
        self.beta, self.alpha = beta, alpha

    def forward(self, c, a, b):
        self.a, self.b = a, b
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

    def backward_tensors(self, g):
        return g.matmul(self.saved_input(1, self.b)), self.saved_input(0, self.a).matmul(g)


# ---- shape checks with PyTorch's messages ------------------------------------------------------
def _check_dtypes(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_name(a.dtype)} != "
                           f"{_dtype.cpp_name(b.dtype)}")
    if a.dtype is _dtype.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")


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
    _check_dtypes(input, other)
    _check_matmul(input, other)
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
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found {mat2.dtype.title}")
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
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape."""
    if mat1.ndim != 2:
        raise RuntimeError("mat1 must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_dtypes(mat1, mat2)
    if mat1.shape[1] != mat2.shape[0]:
        raise _mat_error(mat1.shape[0], mat1.shape[1], mat2.shape[0], mat2.shape[1])
    return AddMatMul(beta, alpha)(as_operand(input), mat1, mat2)


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if batch2.shape[0] != batch1.shape[0] or batch2.shape[1] != batch1.shape[2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch1.shape[0]}, {batch1.shape[2]}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")
    return AddMatMul(beta, alpha)(as_operand(input), batch1, batch2)


# ---- einsum, tensordot -------------------------------------------------------------------------
def _parse_einsum(equation, shapes):
    """Expand '...' and the implicit output: explicit subscripts per operand and for the output."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(subs) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    spare = [c for c in string.ascii_letters if c not in eq]
    n_ell = max((len(shape) - len(s) + 3 for s, shape in zip(subs, shapes) if "..." in s), default=0)
    ell = "".join(spare[:n_ell])
    expanded = []
    for i, (s, shape) in enumerate(zip(subs, shapes)):
        if "..." in s:
            n = len(shape) - len(s) + 3
            s = s.replace("...", ell[n_ell - n:])
        elif len(s) != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {i} and no ellipsis was given")
        expanded.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        letters = lhs.replace("...", "").replace(",", "")
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes = {}
    for i, (s, shape) in enumerate(zip(expanded, shapes)):
        for c, n in zip(s, shape):
            if sizes.get(c, 1) != 1 and n != 1 and sizes[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not "
                                   f"broadcast with previously seen size {sizes[c]}")
            sizes[c] = max(sizes.get(c, 1), n)
    return expanded, out, sizes


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
def einsum(equation, *operands):
    """Einstein summation (``'...'`` and implicit output supported), computed with optimized contraction."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    subs, out, sizes = _parse_einsum(equation, [tuple(t.shape) for t in operands])
    return Einsum(subs, out, sizes, result_dtype(*operands))(*operands)


def _contracted_broadcast(x, dims_x, other, dims_other):
    """``x`` expanded where a contracted dim of size 1 meets a partner of another size (torch broadcasts it)."""
    shape = list(x.shape)
    for dx, do in zip(dims_x, dims_other):
        if shape[dx] == 1:
            shape[dx] = other.shape[do]
    return x if shape == list(x.shape) else x.expand(shape)


@autocast_mode.policy(cpu=autocast_mode.LOWER, cuda=autocast_mode.PROMOTE)  # CPU: through mm, as torch's
@writes_out
def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or two explicit dim lists)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = [[d] if isinstance(d, int) else list(d) for d in dims]
    dims_a = [d % a.ndim for d in dims_a]
    dims_b = [d % b.ndim for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db] and 1 not in (a.shape[da], b.shape[db]):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
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
