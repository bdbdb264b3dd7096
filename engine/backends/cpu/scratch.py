"""Per-thread scratch buffers for the big temporaries of one kernel call, and the stride-phase planes
(with each kernel tap's place in them) that the depthwise convolution and max pooling read their
windows from."""
import threading

import numpy as np

from .threads import parallel_blocks

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


def release():
    """Drop this thread's scratch buffers (the next kernel call allocates what it needs again)."""
    _local.__dict__.pop("buffers", None)


def phase_planes(x, strides, top, left, Hq, Wq, fill):
    """The input, padded with ``fill`` by ``top``/``left`` (and up to Hq*sh x Wq*sw), split into its
    sh*sw stride phases: (sh, sw, N*C, Hq*Wq) in scratch, phase (a, b) holding padded rows a, a+sh, ...
    and columns b, b+sw, ...  A window tap then reads a contiguous run of one flat phase plane, output
    (r, c) at r*Wq + c. Filled straight from x, with no padded copy and no fresh (page-faulting) memory,
    in cache-sized blocks of channels shared out among the threads, so that every phase of a block is
    cut from the same cached input rows and the margins are filled by the threads too (medians against
    whole-array passes per phase: 8x64x112x112 at stride 2 9.1 -> 6.6 ms, 8x256x56x56 10.3 -> 7.1,
    1x960x33x33 padded by 4 1.7 -> 0.8)."""
    N, C, H, W = x.shape
    planes = scratch("phase_planes", (strides[0], strides[1], N * C, Hq, Wq), x.dtype)
    fill_block = phase_plane_filler(x, strides, top, left, Hq, Wq, fill)
    parallel_blocks(lambda lo, hi: fill_block(planes[:, :, lo:hi], lo, hi), N * C, H * W * x.itemsize)
    return planes.reshape(strides[0], strides[1], N * C, Hq * Wq)


def phase_plane_filler(x, strides, top, left, Hq, Wq, fill):
    """``fill_block(planes, lo, hi)``: the phase planes (sh, sw, hi - lo, Hq, Wq) of x's channel planes
    [lo, hi) (flattened over N*C), as ``phase_planes`` lays them out, written into ``planes``."""
    N, C, H, W = x.shape
    sh, sw = strides
    src = x.reshape(N * C, H, W)

    def inside(a, pad, n, q, s):
        """Phase positions [q0, q1) whose input index q*s + a - pad lies in [0, n), and the first index."""
        q0, q1 = max(0, -((a - pad) // s)), min(q, (n - 1 + pad - a) // s + 1)
        return q0, max(q0, q1), q0 * s + a - pad

    phases = [(a, b, inside(a, top, H, Hq, sh), inside(b, left, W, Wq, sw)) for a in range(sh) for b in range(sw)]

    def fill_block(planes, lo, hi):
        for a, b, (hq0, hq1, r0), (wq0, wq1, c0) in phases:
            plane = planes[a, b]
            # The whole plane, then its inside over it: one contiguous fill beat filling just the margins,
            # whose short runs cost a numpy loop each (in-process alternating medians: MobileNetV3's
            # depthwise layers 35.8 -> 32.5 ms summed, 8x64x112x112 max pooling 20.3 -> 16.3 ms).
            plane[...] = fill
            if hq1 > hq0 and wq1 > wq0:
                np.copyto(plane[:, hq0:hq1, wq0:wq1],
                          src[lo:hi, r0:r0 + (hq1 - hq0 - 1) * sh + 1:sh, c0:c0 + (wq1 - wq0 - 1) * sw + 1:sw])
    return fill_block


def phase_windows(x, kernel, strides, dilation, top, left, padded, out_rows, fill):
    """``phase_planes`` of x padded with ``fill`` to ``padded`` = (Hp, Wp), sized for ``out_rows``
    output rows, with each kernel tap's place in them (see ``phase_geometry``). Returns (planes, taps, Wq)."""
    taps, Hq, Wq = phase_geometry(kernel, strides, dilation, padded, out_rows)
    return phase_planes(x, strides, top, left, Hq, Wq, fill), taps, Wq


def phase_geometry(kernel, strides, dilation, padded, out_rows):
    """The phase planes' size for windows over a (Hp, Wp) = ``padded`` input that give ``out_rows``
    output rows, and each kernel tap (row-major) as (phase row, phase column, offset): output (r, c)
    of that tap reads ``planes[a, b, :, offset + r * Wq + c]``, one contiguous run per plane row span
    (the Wq - OW extra columns of each output row are computed and dropped).  Returns (taps, Hq, Wq)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    Hp, Wp = padded
    Wq = -(-Wp // sw)
    taps = [((i * dh) % sh, (j * dw) % sw, (i * dh // sh) * Wq + j * dw // sw) for i in range(kh) for j in range(kw)]
    Hq = max(-(-Hp // sh), -(-(taps[-1][2] + out_rows * Wq) // Wq))
    return taps, Hq, Wq
