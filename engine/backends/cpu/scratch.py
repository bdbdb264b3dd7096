"""Per-thread scratch buffers for the big temporaries of one kernel call, and the stride-phase planes
(with each kernel tap's place in them) that the depthwise convolution and max pooling read their
windows from."""
import threading

import numpy as np

from .threads import copyto

_local = threading.local()


def scratch(slot, shape, dtype):
    """Uninitialised array in a per-thread buffer reused across calls, for big temporaries that die
    within one kernel call (column matrices, phase planes): fresh 60 MB allocations cost ~3 ms of page
    faults here."""
    bufs = _local.__dict__.setdefault("buffers", {})
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if slot not in bufs or bufs[slot].size < n:
        bufs[slot] = np.empty(n, np.uint8)
    return bufs[slot][:n].view(dtype).reshape(shape)


def phase_planes(x, strides, top, left, Hq, Wq, fill):
    """The input, padded with ``fill`` by ``top``/``left`` (and up to Hq*sh x Wq*sw), split into its
    sh*sw stride phases: (sh, sw, N*C, Hq*Wq) in scratch, phase (a, b) holding padded rows a, a+sh, ...
    and columns b, b+sw, ...  A window tap then reads a contiguous run of one flat phase plane, output
    (r, c) at r*Wq + c. Filled straight from x, with no padded copy and no fresh (page-faulting) memory."""
    N, C, H, W = x.shape
    sh, sw = strides
    planes = scratch("phase_planes", (sh, sw, N * C, Hq, Wq), x.dtype)
    src = x.reshape(N * C, H, W)

    def inside(a, pad, n, q, s):
        """Phase positions [q0, q1) whose input index q*s + a - pad lies in [0, n), and the first index."""
        q0, q1 = max(0, -((a - pad) // s)), min(q, (n - 1 + pad - a) // s + 1)
        return q0, max(q0, q1), q0 * s + a - pad

    for a in range(sh):
        hq0, hq1, r0 = inside(a, top, H, Hq, sh)
        for b in range(sw):
            wq0, wq1, c0 = inside(b, left, W, Wq, sw)
            plane = planes[a, b]
            plane[:, :hq0] = fill
            plane[:, hq1:] = fill
            plane[:, hq0:hq1, :wq0] = fill
            plane[:, hq0:hq1, wq1:] = fill
            if hq1 > hq0 and wq1 > wq0:
                copyto(plane[:, hq0:hq1, wq0:wq1], src[:, r0:r0 + (hq1 - hq0 - 1) * sh + 1:sh,
                                                       c0:c0 + (wq1 - wq0 - 1) * sw + 1:sw])
    return planes.reshape(sh, sw, N * C, Hq * Wq)


def phase_windows(x, kernel, strides, dilation, top, left, padded, out_rows, fill):
    """``phase_planes`` of x padded with ``fill`` to ``padded`` = (Hp, Wp), sized for ``out_rows``
    output rows, with each kernel tap (row-major) as (phase row, phase column, offset): output (r, c)
    of that tap reads ``planes[a, b, :, offset + r * Wq + c]``, one contiguous run per plane row span
    (the Wq - OW extra columns of each output row are computed and dropped).  Returns (planes, taps, Wq)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    Hp, Wp = padded
    Wq = -(-Wp // sw)
    taps = [((i * dh) % sh, (j * dw) % sw, (i * dh // sh) * Wq + j * dw // sw) for i in range(kh) for j in range(kw)]
    Hq = max(-(-Hp // sh), -(-(taps[-1][2] + out_rows * Wq) // Wq))
    return phase_planes(x, strides, top, left, Hq, Wq, fill), taps, Wq
