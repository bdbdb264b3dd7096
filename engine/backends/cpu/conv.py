"""2-D convolution and transposed convolution kernels: im2col over strided views plus one batched GEMM
(Winograd for wide 3x3 layers, einsum grids or per-tap passes for depthwise ones, one GEMM per tap where
windows hang far over the padding; input gradients of narrow layers on wide planes by one GEMM per kernel
row over shifted copies)."""
import itertools
import math
from collections import namedtuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..special import erf
from .blas import gemm
from .scratch import phase_geometry, phase_plane_filler, scratch as _scratch
from .threads import cache_blocks, copyto, parallel_blocks, parallel_chunks
from .ufunc_buffer import with_row_buffer

# Below this many output pixels per image the batch is folded into the GEMM's column axis: one wide
# GEMM beats N narrow ones once images are small, and the transposes it costs are small too.  A 1x1
# kernel needs no im2col copy unfolded, so folding (which copies) pays off only for smaller images.
_FOLD_MAX_PIXELS = 400
_FOLD_MAX_PIXELS_1X1 = 100

# The forward keeps its column matrix for the weight gradient only when output channel groups are
# narrower than this: rebuilding it is then a large share of the weight-gradient GEMM (the 7x7 stem,
# 64-channel 3x3 layers); elsewhere memory wins and the backward rebuilds it in scratch.
_KEEP_COLS_MAX_CHANNELS = 128

# Winograd F(2x2, 3x3) (Lavin & Gray 2015): a 4x4 input tile d and a 3x3 kernel g give the 2x2 outputs
# AT [(G g G^T) * (BT d BT^T)] AT^T, 16 multiplies instead of 36.  In Kronecker form every transform
# is one small GEMM over all tiles.  Its rounding error stays at the direct method's level (unlike
# F(4x4, 3x3)); it pays off once channel counts make the GEMM dominate the transforms.  Input gradients
# of stride-1 layers with this many channels always use it: the other two methods need a transposed
# copy of the weight or a reduction pass (8x512x7x7: 16 ms against 23-24 ms).
_WINOGRAD_MIN_CHANNELS = 128
# The forward correlation, whose direct method needs neither, only where the GEMM flops saved outweigh
# the transforms: >= 256 channels, planes of 14x14 and up, and N*OH*OW*channels >= 8x14x14x256.
# Measured in alternating runs, weight transform included: 8x256x14x14 10.7 ms against 12.8 direct,
# 4x512x14x14 18.9 against 23.7; direct wins at 128 channels (8x128x28x28: 13.9 against 15.1), on 7x7
# planes, whose 2x2 tiles waste a quarter of the work (8x512x7x7: 12.9 against 15.3), and below that size.
_WINOGRAD_FORWARD_MIN_CHANNELS = 256
_WINOGRAD_FORWARD_MIN_SIDE = 14
_WINOGRAD_FORWARD_MIN_WORK = 8 * 14 * 14 * 256
_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)
_KB, _KG, _KA = np.kron(_BT, _BT), np.kron(_G, _G), np.kron(_AT, _AT)

# Depthwise layers whose flat output rows (OH * Wq, see _depthwise_corr) are at most this long run
# channels-last instead, where every tap is one long run over all N*C channels: on MobileNetV3's 7x7
# planes at batch 8 (960 channels 5x5: 8.9 -> 2.7 ms, 672 5x5/2: 8.2 -> 4.8) short rows cost more
# per-call overhead than the two transposes; from 14x14 planes on (rows of 200+) it is a tie or a loss.
_DEPTHWISE_CHANNELS_LAST_MAX_ROW = 128

# A correlation whose windows hang over the zero padding by more than this share of their taps (large
# dilations on small planes: DeepLabV3's ASPP at rates 12-36 on 65x65 keeps 40-77% of them) is summed
# tap by tap over the outputs each tap reaches; below it the extra GEMM calls and accumulating passes
# cost more than the zeros they skip.
_MAX_PADDED_TAP_SHARE = 0.2

# Input gradients of stride-1 layers whose correlation runs from 16-127 to 16-128 channels on planes
# at least this wide go through _row_shift_corr. Its kh GEMMs per image, K = C*kw each, run as fast as
# im2col's one (K = C*kh*kw) there, and it copies its input kw times instead of kh*kw times. Fastest of
# 9-41 in-process alternating runs, 3x3 kernels, batch 8 unless noted: 64x56x56 12.5 against 15.0 ms
# (medians of 60: 15.4 against 18.1); 128 to 64 channels on 56x56 26.7 against 35.9; 64x112x112 at
# batch 1 8.1 against 9.6. On 28x28 planes (its rows are 7% wider than the output's) it is a tie at 64
# channels; with 3 output channels its GEMMs are too thin (15.4 against 4.5 ms); from 128 input channels
# on, Winograd wins (128x56x56: 48.2 against 44.2 ms). Forward correlations stay on im2col: they gained
# at most 8% (64x56x56: 12.2 against 13.2 ms) and nothing at batch 1 or on 28x28 planes.
_ROW_SHIFT_MIN_CHANNELS = 16
_ROW_SHIFT_MIN_WIDTH = 48

# The passes next to GEMMs (im2col copies, epilogues) are split among the threads only from this size up,
# not from threads._MIN_BYTES: on the 2-vCPU Intel VM measured (2026-12-04) a hand-off and the wait for its
# result cost ~80 us (both threads wake through the hypervisor), and for ~0.1 ms after a GEMM OpenBLAS's
# idle workers still spin on the other core. After a GEMM, a BatchNorm + residual + ReLU epilogue on
# 256x56x56 took 0.52 ms inline against 0.69 split, and was no faster split up to 16 MB; resnet50's graph
# at batch 1 64.2-65.6 -> 60.8-60.9 ms (alternating processes). Depthwise layers keep threads._MIN_BYTES:
# their bytes weighted by their taps against this bound cost mobilenet_v2 1 ms.
_NEAR_GEMM_MIN_BYTES = 16 << 20

# A fused epilogue's per-channel scale (eval BatchNorm's) multiplies the weight instead of the output
# where the output has at least _SCALE_FOLD_RATIO times as many entries as the weight: a pass over the
# weight instead of one over the output (depthwise layers but those on maps under 4x their kernel's
# size, 1x1 layers on large maps; not ResNet's late layers at batch 1, whose weights are up to 94x their
# output). In-process alternating calls, 40 each, no fold / depthwise layers only / this rule: lraspp's
# graph 84.5 / 83.7 / 82.8 ms, mobilenet_v3_large's at batch 1 19.47 / 19.22 / 19.08; at a ratio of 1,
# mobilenet_v3_large lost ~0.3 ms.
_SCALE_FOLD_RATIO = 4

ConvSaved = namedtuple("ConvSaved", "x w stride pads dilation groups cols")
ConvSaved.__doc__ = ("What conv2d_backward needs: the input, the weight, the geometry and, for narrow layers, "
                     "the forward's (column matrix, fold) pair (else None: rebuilt from x).")

ConvTransposeSaved = namedtuple("ConvTransposeSaved", "x w stride padding output_padding dilation groups")
ConvTransposeSaved.__doc__ = "What conv_transpose2d_backward needs: the input, the weight and the geometry."


def _pair(v):
    """Accept an int or a 2-sequence for a per-axis parameter."""
    return (int(v), int(v)) if np.isscalar(v) else (int(v[0]), int(v[1]))


def _pad_crop(x, top, bottom, left, right):
    """Zero-pad the last two axes of x; negative amounts crop instead."""
    H, W = x.shape[-2:]
    x = x[..., max(-top, 0):H - max(-bottom, 0), max(-left, 0):W - max(-right, 0)]
    top, bottom, left, right = max(top, 0), max(bottom, 0), max(left, 0), max(right, 0)
    if top == bottom == left == right == 0:
        return x
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (h + top + bottom, w + left + right), x.dtype)
    copyto(out[..., top:top + h, left:left + w], x)
    return out


def _fold(n, pixels, kernel_1x1):
    """Whether to fold the batch into the GEMM columns (see _FOLD_MAX_PIXELS)."""
    return n > 1 and pixels < (_FOLD_MAX_PIXELS_1X1 if kernel_1x1 else _FOLD_MAX_PIXELS)


def _out_size(size, k, stride, dilation):
    """Number of window positions along an already padded axis."""
    return (size - dilation * (k - 1) - 1) // stride + 1


def _im2col(x, kh, kw, stride, pads, dilation, groups, taps_first=False, keep=False):
    """Column matrix of x, shaped (B, groups, C/groups*kh*kw, L), plus (OH, OW, fold).

    Unfolded (B = N, L = OH*OW): each image is its own GEMM and the result is NCHW with no transpose.
    Folded (B = 1, L = N*OH*OW): one wide GEMM, used when images are small.
    Rows are ordered (channel, kh, kw) within a group, or (kh, kw, channel) with taps_first.
    A copied matrix lives in scratch slot 0 (use it before the next _im2col call) unless keep.
    """
    xp = _pad_crop(x, *pads)
    N, C, Hp, Wp = xp.shape
    sh, sw = stride
    dh, dw = dilation
    OH, OW = _out_size(Hp, kh, sh, dh), _out_size(Wp, kw, sw, dw)
    fold = _fold(N, OH * OW, kh == kw == 1)
    cg = C // groups * kh * kw
    if kh == kw == 1:  # no taps to unfold: subsample (a no-op for stride 1) and, if folding, transpose
        v = xp[:, :, :(OH - 1) * sh + 1:sh, :(OW - 1) * sw + 1:sw]
        if fold:
            return v.transpose(1, 0, 2, 3).reshape(1, groups, cg, N * OH * OW), OH, OW, fold
        return v.reshape(N, groups, cg, OH * OW), OH, OW, fold
    sN, sC, sH, sW = xp.strides
    rows = ((groups, kh, kw, C // groups), (sC * (C // groups), sH * dh, sW * dw, sC)) if taps_first else \
        ((C, kh, kw), (sC, sH * dh, sW * dw))
    if fold:
        v = as_strided(xp, rows[0] + (N, OH, OW), rows[1] + (sN, sH * sh, sW * sw))
    else:
        v = as_strided(xp, (N,) + rows[0] + (OH, OW), (sN,) + rows[1] + (sH * sh, sW * sw))
    col = np.empty(v.shape, x.dtype) if keep else _scratch(0, v.shape, x.dtype)
    copyto(col, v, _NEAR_GEMM_MIN_BYTES)
    return col.reshape((1, groups, cg, N * OH * OW) if fold else (N, groups, cg, OH * OW)), OH, OW, fold


def _to_cols_layout(a, groups, fold):
    """Bring an (N, K, H, W) array into the GEMM layout (B, groups, K/groups, L) matching _im2col's."""
    N, K, H, W = a.shape
    if fold:
        return a.transpose(1, 0, 2, 3).reshape(1, groups, K // groups, N * H * W)
    return a.reshape(N, groups, K // groups, H * W)


def _gemm(a, b, fold):
    """a @ b; a folded result (transposed again by _from_cols_layout) goes to scratch slot 1."""
    if not fold:
        return np.matmul(a, b)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return np.matmul(a, b, out=_scratch(1, shape, np.result_type(a, b)))


def _nchw_view(y, N, OH, OW, fold):
    """View a GEMM result (B, groups, K/groups, L) as (N, K, OH, OW)."""
    K = y.shape[1] * y.shape[2]
    return y.reshape(K, N, OH, OW).transpose(1, 0, 2, 3) if fold else y.reshape(N, K, OH, OW)


def _from_cols_layout(y, N, OH, OW, fold):
    """Turn a GEMM result (B, groups, K/groups, L) into an NCHW array (copied only when folded)."""
    v = _nchw_view(y, N, OH, OW, fold)
    if not fold:
        return v
    out = np.empty(v.shape, v.dtype)
    copyto(out, v)
    return out


def _winograd_ok(w_shape, stride, dilation, groups):
    """Whether an input gradient with this weight shape goes through _winograd_corr."""
    O, C, kh, kw = w_shape
    return ((kh, kw) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1) and groups == 1
            and min(O, C) >= _WINOGRAD_MIN_CHANNELS)


def _winograd_forward_pays(x_shape, w_shape, stride, pads, dilation, groups):
    """Whether the forward correlation of x with w goes through _winograd_corr (see above); a dilated
    one counts the planes of its sub-grids, which are what the tiles cover."""
    if not _winograd_ok(w_shape, stride, (1, 1), groups):  # the sub-grids are undilated correlations
        return False
    N, _, H, W = x_shape
    (dh, dw), channels = dilation, min(w_shape[:2])
    OH, OW = H + pads[0] + pads[1] - 2 * dh, W + pads[2] + pads[3] - 2 * dw
    return (channels >= _WINOGRAD_FORWARD_MIN_CHANNELS and min(OH // dh, OW // dw) >= _WINOGRAD_FORWARD_MIN_SIDE
            and N * OH * OW * channels >= _WINOGRAD_FORWARD_MIN_WORK)


def _winograd_weights(w, flip):
    """Transformed 3x3 weights (16, O, C); flip rotates each kernel 180 degrees (data gradient)."""
    O, C = w.shape[:2]
    kg = _KG[:, ::-1] if flip else _KG
    return np.matmul(kg.astype(w.dtype), w.reshape(O * C, 9).T).reshape(16, O, C)


def _winograd_corr(x, u, pads, dilation=(1, 1)):
    """Stride-1 3x3 correlation of x (N,C,H,W) with transformed weights u (16, O, C), NCHW result.

    With a dilation (dh, dw), output rows r = a (mod dh) read only input rows of the same residue: each
    of the dh*dw sub-grids is an undilated correlation and gets its own 2x2 tiles, which the same kind
    of strided view gathers (DeepLabV3's dilated layer3 and layer4)."""
    N, C, H, W = x.shape
    O = u.shape[1]
    dh, dw = dilation
    OH, OW = H + pads[0] + pads[1] - 2 * dh, W + pads[2] + pads[3] - 2 * dw
    th, tw = -(-OH // (2 * dh)), -(-OW // (2 * dw))  # tiles per sub-grid
    xp = _pad_crop(x, pads[0], pads[1] + 2 * dh * th - OH, pads[2], pads[3] + 2 * dw * tw - OW)
    sN, sC, sH, sW = xp.strides
    # d[u, v, c, n, a, p, b, q] = xp[n, c, a + dh * (2p + u), b + dw * (2q + v)]
    d = _scratch(0, (4, 4, C, N, dh, th, dw, tw), x.dtype)
    copyto(d, as_strided(xp, d.shape, (dh * sH, dw * sW, sC, sN, sH, 2 * dh * sH, sW, 2 * dw * sW)))
    tiles = d.size // (16 * C)
    v = np.matmul(_KB.astype(x.dtype), d.reshape(16, -1), out=_scratch(1, (16, C * tiles), x.dtype))
    m = np.matmul(u, v.reshape(16, C, tiles), out=_scratch(2, (16, O, tiles), x.dtype))
    t = np.matmul(_KA.astype(x.dtype), m.reshape(16, -1), out=_scratch(1, (4, O * tiles), x.dtype))
    # Output row p * 2dh + i * dh + a holds tile row p, tile output row i, sub-grid a (columns alike). One
    # copy per (i, j, a, b) keeps the tile columns q innermost; a single transposing copy runs its inner
    # loop over the 2 outputs of a tile (256 channels on 65x65: 33 -> 30 ms undilated, ~37 -> 29 at rate 2).
    y = np.empty((N, O, th, 2, dh, tw, 2, dw), x.dtype)
    t = t.reshape(2, 2, O, N, dh, th, dw, tw)
    for i, j, a, b in itertools.product(range(2), range(2), range(dh), range(dw)):
        copyto(y[:, :, :, i, a, :, j, b], t[i, j, :, :, a, :, b].transpose(1, 0, 2, 3))
    y = y.reshape(N, O, 2 * dh * th, 2 * dw * tw)
    return y if (2 * dh * th, 2 * dw * tw) == (OH, OW) else np.ascontiguousarray(y[:, :, :OH, :OW])


def _is_depthwise(x_shape, w_shape, groups, stride):
    """Whether each input channel is filtered by its own single kernel (MobileNet's depthwise layers),
    with equal strides on both axes (what the flat-plane kernel below handles)."""
    return groups > 1 and groups == x_shape[1] == w_shape[0] and stride[0] == stride[1]


def _depthwise_corr(x, w, stride, pads, dilation, epilogue=None):
    """Depthwise correlation: every output the weighted sum of its k*k taps, all channel planes at once,
    followed by ``epilogue`` (an Epilogue) when given.

    A GEMM per channel would be (1 x k*k) @ (k*k x H*W): all call overhead and no reuse. Instead the
    padded input is split into its s*s stride phases (x[a::s, b::s]) and each phase plane is read as
    one flat row of width Wq: tap (i, j) then reads a contiguous run of one phase, output (r, c) at
    r*Wq + c. The few columns c >= OW are computed and dropped; in exchange the taps are summed over
    long rows.

    Each thread takes one run of channel planes through the whole layer: it cuts their phase planes
    from the input (in cache-sized blocks, so that every phase of a block comes from cached input
    rows), sums the taps, crops the rows into the output and applies the epilogue, with no pass of its
    own for the crop or the epilogue. MobileNetV3's layers with BatchNorm and hardswish, in-process
    alternating runs against separate passes: 0.79-1.02x the time at 520x520, batch 1 (0.90 over all
    of them), 0.94 at 224x224, batch 8. Smaller pieces per thread lost: each costs a few dozen numpy
    calls, and two threads issuing them contend (1 MB pieces: 1.5x slower).

    With stride 1 an einsum sums a whole grid of taps in one pass, but only when its columns are not
    adjacent: numpy's iterator then loops over the output row innermost, and over the kernel columns
    otherwise (7-10x slower). Undilated kernels are therefore summed as two grids, even and odd columns
    (MobileNetV3's stride-1 layers: 1.1-1.4x faster than a multiply and an add per tap, 5x5 ones on
    28x28 and 7x7 planes 2-5x faster than one einsum over all taps). Strided layers keep a multiply-add
    per tap: split over their phases, the grids are too small to pay.
    """
    N, C = x.shape[:2]
    kh, kw = w.shape[2:]
    s, (dh, dw) = stride[0], dilation
    Hp, Wp = x.shape[2] + pads[0] + pads[1], x.shape[3] + pads[2] + pads[3]
    OH, OW = _out_size(Hp, kh, s, dh), _out_size(Wp, kw, s, dw)
    if OH * -(-Wp // s) <= _DEPTHWISE_CHANNELS_LAST_MAX_ROW:  # flat rows of phase-plane width
        y = _depthwise_channels_last(x, w, s, pads, (dh, dw), (OH, OW))
        return y if epilogue is None else conv_epilogue(y, epilogue)
    windows_at, Hq, Wq = phase_geometry((kh, kw), (s, s), (dh, dw), (Hp, Wp), OH)
    fill_planes = phase_plane_filler(x, (s, s), pads[0], pads[2], Hq, Wq, 0)
    length = OH * Wq
    taps = np.tile(w.reshape(C, kh, kw).astype(x.dtype, copy=False), (N, 1, 1))
    y = np.empty((N, C, OH, OW), x.dtype)
    y_planes = y.reshape(N * C, OH, OW)
    finish = _row_epilogue(y.reshape(N * C, OH * OW), N, epilogue) if epilogue is not None else None
    column_period = 1 if dw > 1 else 2

    def summed(planes, out, weights):
        for j0 in range(min(kw, column_period)):
            flat = planes[0, 0, :, j0 * dw:]
            item = flat.itemsize
            windows = as_strided(flat, (len(out), kh, len(range(j0, kw, column_period)), length),
                                 (flat.strides[0], dh * Wq * item, column_period * dw * item, item))
            grid = _scratch("depthwise_grid", out.shape, x.dtype) if j0 else out
            np.einsum("pijl,pij->pl", windows, weights[:, :, j0::column_period], out=grid)
            if j0:
                np.add(out, grid, out=out)

    def accumulated(planes, out, weights):
        product = _scratch("depthwise_grid", out.shape, x.dtype)
        weights = weights.reshape(len(out), kh * kw)
        for t, (a, b, offset) in enumerate(windows_at):
            np.multiply(planes[a, b, :, offset:offset + length], weights[:, t, None], out=product if t else out)
            if t:
                np.add(out, product, out=out)

    taps_summed = summed if s == 1 else accumulated

    def block(lo, hi):
        planes = _scratch("depthwise_planes", (s, s, hi - lo, Hq, Wq), x.dtype)
        for a, b in cache_blocks(lo, hi, x.shape[2] * x.shape[3] * x.itemsize):  # phases from cached rows
            fill_planes(planes[:, :, a - lo:b - lo], a, b)
        out = _scratch("depthwise_rows", (hi - lo, length), x.dtype)
        taps_summed(planes.reshape(s, s, hi - lo, Hq * Wq), out, taps[lo:hi])
        np.copyto(y_planes[lo:hi], out.reshape(hi - lo, OH, Wq)[:, :, :OW])
        if finish is not None:
            finish(lo, hi)

    parallel_chunks(with_row_buffer(block, length), N * C, N * C * length * x.itemsize)
    return y


def _depthwise_channels_last(x, w, s, pads, dilation, out_hw):
    """_depthwise_corr on small planes: the padded input transposed to (H, W, N*C), so that one einsum
    over all taps and output pixels runs its inner loop along the channels, then transposed back."""
    N, C, H, W = x.shape
    kh, kw = w.shape[2:]
    (top, bottom, left, right), (dh, dw), (OH, OW) = pads, dilation, out_hw
    P, Hp, Wp = N * C, H + top + bottom, W + left + right
    padded = _scratch("depthwise_channels_last", (Hp, Wp, P), x.dtype)
    padded[:top] = padded[top + H:] = 0
    padded[top:top + H, :left] = padded[top:top + H, left + W:] = 0
    copyto(padded[top:top + H, left:left + W], x.reshape(P, H, W).transpose(1, 2, 0))
    taps = np.ascontiguousarray(np.tile(w.reshape(C, kh * kw).astype(x.dtype, copy=False), (N, 1)).T)
    out = _scratch("depthwise_channels_last_out", (OH, OW, P), x.dtype)
    item = x.itemsize

    def channels(lo, hi):
        windows = as_strided(padded[:, :, lo:hi], (kh, kw, OH, OW, hi - lo),
                             (dh * Wp * P * item, dw * P * item, s * Wp * P * item, s * P * item, item))
        np.einsum("ijrcp,ijp->rcp", windows, taps.reshape(kh, kw, P)[:, :, lo:hi], out=out[:, :, lo:hi])

    parallel_chunks(channels, P, out.nbytes)
    y = np.empty((N, C, OH, OW), x.dtype)
    copyto(y.reshape(P, OH * OW), out.reshape(OH * OW, P).T)
    return y


def _tap_spans(in_len, out_len, k, stride, pad_before, dilation):
    """For each tap t along one axis, the outputs [o0, o1) whose window reads it inside the input:
    o*stride - pad_before + t*dilation in [0, in_len)."""
    spans = []
    for t in range(k):
        start = pad_before - t * dilation
        o0 = max(0, -(-start // stride))
        spans.append((o0, max(o0, min(out_len, (in_len - 1 + start) // stride + 1))))
    return spans


def _padded_tap_share(rows, cols, out_hw):
    """Share of the taps of all windows that read padding, from the tap spans of both axes."""
    inside = sum(o1 - o0 for o0, o1 in rows) * sum(o1 - o0 for o0, o1 in cols)
    return 1 - inside / (out_hw[0] * len(rows) * out_hw[1] * len(cols))


def _batch_columns(a, groups, slot):
    """(N, C, h, w) -> (groups, C/groups, N*h*w) in scratch ``slot``: one GEMM then spans the batch."""
    N, C, h, w = a.shape
    grouped = a.reshape(N, groups, C // groups, h, w).transpose(1, 2, 0, 3, 4)
    columns = _scratch(slot, grouped.shape, a.dtype)
    copyto(columns, grouped)
    return columns.reshape(groups, C // groups, N * h * w)


def _tapwise_corr(x, w, stride, pads, dilation, groups, out_hw, rows, cols):
    """Correlation as one GEMM per kernel tap, over the block of outputs whose windows read that tap
    inside the input (``rows``/``cols``: _tap_spans), summed into a zeroed output: taps in the padding
    cost nothing, and every GEMM spans a whole block (DeepLabV3's ASPP, 2048 channels on 65x65, rates
    12/24/36: 289/245/156 -> 265/169/137 ms against one GEMM per region of outputs sharing their
    in-bounds taps, whose GEMMs were narrow)."""
    N, C, H, W = x.shape
    O = w.shape[0]
    (sh, sw), (dh, dw) = stride, dilation
    y = np.zeros((N, O) + out_hw, x.dtype)
    for (i, (o0, o1)), (j, (p0, p1)) in itertools.product(enumerate(rows), enumerate(cols)):
        if o0 == o1 or p0 == p1:
            continue
        h0, w0 = o0 * sh - pads[0] + i * dh, p0 * sw - pads[2] + j * dw
        window = x[:, :, h0:h0 + (o1 - o0 - 1) * sh + 1:sh, w0:w0 + (p1 - p0 - 1) * sw + 1:sw]
        tap = w[:, :, i, j].reshape(groups, O // groups, C // groups)
        block = (o1 - o0) * (p1 - p0)
        if N > 1 and block <= _FOLD_MAX_PIXELS:  # one GEMM over the batch's windows, not N narrow ones
            product = np.matmul(tap, _batch_columns(window, groups, 0),
                                out=_scratch(1, (groups, O // groups, N * block), x.dtype))
            y[:, :, o0:o1, p0:p1] += product.reshape(O, N, o1 - o0, p1 - p0).transpose(1, 0, 2, 3)
            continue
        shape = (N, groups, C // groups, block)
        if sh == sw == 1 and p1 - p0 == W:  # whole rows: already a matrix per channel group
            columns = window.reshape(shape)
        else:
            columns = _scratch(0, shape, x.dtype)
            copyto(columns.reshape(window.shape), window)
        product = np.matmul(tap, columns, out=_scratch(1, shape[:2] + (O // groups, block), x.dtype))
        y[:, :, o0:o1, p0:p1] += product.reshape(N, O, o1 - o0, p1 - p0)
    return y


def _row_shift_pays(in_channels, out_channels, out_width):
    """Whether a stride-1 ungrouped correlation goes through _row_shift_corr (see _ROW_SHIFT_*)."""
    return (_ROW_SHIFT_MIN_CHANNELS <= in_channels < _WINOGRAD_MIN_CHANNELS
            and _ROW_SHIFT_MIN_CHANNELS <= out_channels <= _WINOGRAD_MIN_CHANNELS
            and out_width >= _ROW_SHIFT_MIN_WIDTH)


def _row_shift_corr(x, w, pads, dilation):
    """Stride-1 correlation of an ungrouped layer as kh GEMMs per image, one per kernel row, summed by
    BLAS into one output, from kw copies of the padded input instead of im2col's kh*kw.

    Copy j of a channel is its padded plane, read as one flat row of the padded width Wp, moved left by
    j*dw. Kernel row i's kw taps for every output (r, c) are then the kw copies' entries at
    (r + i*dh)*Wp + c: a window of the copies' rows, which BLAS reads in place. Outputs come out Wp wide;
    the last (kw-1)*dw columns of each row are dropped as each image's result is cropped into place (the
    copies' entries moved in past a row's end, from the next row, are only read for those).
    """
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    (top, bottom, left, right), (dh, dw) = pads, dilation
    Hp, Wp = H + top + bottom, W + left + right
    OH, OW = _out_size(Hp, kh, 1, dh), _out_size(Wp, kw, 1, dw)
    length = OH * Wp
    kernel_rows = [np.ascontiguousarray(w[:, :, i]).reshape(O, C * kw) for i in range(kh)]
    fill_planes = phase_plane_filler(x, (1, 1), top, left, Hp + 1, Wp, 0)  # a zero row more for the moves
    padded = _scratch("row_shift_padded", (C, (Hp + 1) * Wp), x.dtype)
    copies = _scratch(0, (C, kw, Hp * Wp), x.dtype)
    rows = copies.reshape(C * kw, Hp * Wp)
    wide = _scratch(1, (O, length), x.dtype)
    y = np.empty((N, O, OH, OW), x.dtype)
    item = x.itemsize
    for n in range(N):
        fill_planes(padded.reshape(1, 1, C, Hp + 1, Wp), n * C, (n + 1) * C)
        np.copyto(copies, as_strided(padded, copies.shape, (padded.strides[0], dw * item, item)))
        for i in range(kh):
            gemm(kernel_rows[i], rows[:, i * dh * Wp:i * dh * Wp + length], wide, accumulate=i > 0)
        copyto(y[n], wide.reshape(O, OH, Wp)[:, :, :OW])
    return y


def _corr(x, w, stride, pads, dilation, groups, weight_grad, epilogue=None):
    """Cross-correlate x (N,C,H,W) with w (O,C/groups,KH,KW), then apply ``epilogue`` if given:
    (fresh NCHW y, kept (col, fold) or None)."""
    if _is_depthwise(x.shape, w.shape, groups, stride):
        return _depthwise_corr(x, w, stride, pads, dilation, epilogue), None
    y, cols = _dense_corr(x, w, stride, pads, dilation, groups, weight_grad)
    return (y if epilogue is None else conv_epilogue(y, epilogue)), cols


def _dense_corr(x, w, stride, pads, dilation, groups, weight_grad):
    """_corr of a layer that is not depthwise, without the epilogue."""
    if _winograd_forward_pays(x.shape, w.shape, stride, pads, dilation, groups):
        return _winograd_corr(x, _winograd_weights(w, flip=False), pads, dilation), None
    O, _, kh, kw = w.shape
    # Without a weight gradient to come, a kept (fresh, page-faulting) matrix would be waste.
    keep = kh * kw > 1 and O // groups < _KEEP_COLS_MAX_CHANNELS and weight_grad
    if kh * kw > 1:
        (N, _, H, W), (sh, sw), (dh, dw) = x.shape, stride, dilation
        OH, OW = _out_size(H + pads[0] + pads[1], kh, sh, dh), _out_size(W + pads[2] + pads[3], kw, sw, dw)
        rows, cols = _tap_spans(H, OH, kh, sh, pads[0], dh), _tap_spans(W, OW, kw, sw, pads[2], dw)
        if _padded_tap_share(rows, cols, (OH, OW)) > _MAX_PADDED_TAP_SHARE:
            return _tapwise_corr(x, w, stride, pads, dilation, groups, (OH, OW), rows, cols), None
        if not keep and N > 1 and not _fold(N, OH * OW, False):
            return _im2col_gemm_per_image(x, w, stride, pads, dilation, groups), None
    col, OH, OW, fold = _im2col(x, kh, kw, stride, pads, dilation, groups, keep=keep)
    y = _from_cols_layout(_gemm(w.reshape(groups, O // groups, -1), col, fold), x.shape[0], OH, OW, fold)
    return y, ((col, fold) if keep else None)


def _im2col_gemm_per_image(x, w, stride, pads, dilation, groups):
    """im2col + GEMM image by image (batches of images too big to fold): the column matrix, kh*kw times
    an image, then takes one image's scratch memory instead of the batch's (ResNet's 64-channel 3x3
    layer at batch 8: 7 MB instead of 58) and is still in cache for its GEMM; times are the same within
    noise (0.9-1.15x the batched im2col on ResNet-50's layers)."""
    N, O = x.shape[0], w.shape[0]
    weights = w.reshape(groups, O // groups, -1)
    y = None
    for n in range(N):
        col, OH, OW, _ = _im2col(x[n:n + 1], *w.shape[2:], stride, pads, dilation, groups)
        if y is None:
            y = np.empty((N, groups, O // groups, OH * OW), x.dtype)
        np.matmul(weights, col[0], out=y[n])
    return y.reshape(N, O, OH, OW)


def _weight_grad(col, fold, gy, groups, w_shape):
    """Gradient of the weight from the column matrix of the input and the output gradient gy (N,O,OH,OW).

    C-contiguous like torch's: SGD's passes over transposed resnet50 gradients took 4x as long."""
    g = _to_cols_layout(gy, groups, fold)
    # Per-image GEMMs of kernels with taps run up to 20% faster transposed, col @ g^T (64-channel ResNet
    # layers), and such weights are small enough to copy back into place.
    transposed = not fold and w_shape[2] * w_shape[3] > 1
    gw = np.matmul(col, g.swapaxes(-1, -2)) if transposed else np.matmul(g, col.swapaxes(-1, -2))
    gw = gw[0] if gw.shape[0] == 1 else gw.sum(0)
    return (np.ascontiguousarray(gw.swapaxes(-1, -2)) if transposed else gw).reshape(w_shape)


def _phase_taps(r, s, pad, d, k, out_len, in_len):
    """Taps and padding for the input rows r, r+s, r+2s, ... of a strided convolution's data gradient.

    Row i = s*q + r receives gy[q + e] * w[t] for each tap t with (r + pad - t*d) divisible by s,
    e = (r + pad - t*d) / s.  Listed with e increasing, these taps form a stride-1 correlation of gy
    with dilation d/gcd(d, s).  Returns (taps, dilation, pad_before, pad_after) or None if no tap hits.
    """
    taps = [t for t in range(k - 1, -1, -1) if (r + pad - t * d) % s == 0]
    if not taps:
        return None
    e_first, e_last = (r + pad - taps[0] * d) // s, (r + pad - taps[-1] * d) // s
    n_rows = (in_len - r + s - 1) // s
    step = d // int(np.gcd(d, s)) if len(taps) > 1 else 1
    return taps, step, -e_first, n_rows - 1 + e_last - (out_len - 1)


def _data_grad(gy, w, in_hw, stride, pad_tl, dilation, groups):
    """Gradient w.r.t. the input of a convolution (= transposed convolution of gy), shape (N, C, *in_hw).

    Stride-1 layers of 16-127 channels on wide planes take _row_shift_corr (see _ROW_SHIFT_MIN_WIDTH).
    Otherwise two exact algorithms with the same GEMM flops; the faster depends on the shape (measured
    on ResNet layers): col2im needs no transposed weight copy and wins for 1x1 kernels, when the input
    has fewer channels than the output (its column matrix is then the smaller one) and when the weight outnumbers
    the output gradient (strided 3x3 layers on 14x14 maps: the copy then costs more than the reduction);
    otherwise the phase-wise correlation wins because its GEMM runs on an unpadded grid and needs no
    reduction pass (and stride-1 3x3 layers of 128+ channels use Winograd there).
    """
    pads = _row_shift_grad_pads(gy.shape, w.shape, in_hw, stride, pad_tl, dilation, groups)
    if pads is not None:
        return _row_shift_corr(gy, w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1], pads, dilation)
    if (w.shape[2] * w.shape[3] == 1 or w.shape[1] * groups < gy.shape[1]
            or (w.size > gy.size and not _winograd_ok(w.shape, stride, dilation, groups))):
        return _data_grad_col2im(gy, w, in_hw, stride, pad_tl, dilation, groups)
    return _data_grad_phases(gy, w, in_hw, stride, pad_tl, dilation, groups)


def _row_shift_grad_pads(gy_shape, w_shape, in_hw, stride, pad_tl, dilation, groups):
    """The padding of gy (top, bottom, left, right) under which the input gradient is the stride-1
    correlation of gy with the flipped, transposed kernel, where that goes through _row_shift_corr;
    else None (also when the forward padded by more than the kernel's reach)."""
    (_, O, OH, OW), (_, C, kh, kw), (H, W) = gy_shape, w_shape, in_hw
    if tuple(stride) != (1, 1) or groups != 1 or kh * kw == 1 or not _row_shift_pays(O, C, W):
        return None
    top, left = (kh - 1) * dilation[0] - pad_tl[0], (kw - 1) * dilation[1] - pad_tl[1]
    pads = (top, H - OH + pad_tl[0], left, W - OW + pad_tl[1])
    return pads if min(pads) >= 0 else None


def _data_grad_col2im(gy, w, in_hw, stride, pad_tl, dilation, groups):
    """Input gradient by one GEMM, dcol = w^T @ gy, followed by an overlap-add done as a reduction.

    One GEMM gives every tap's contribution, dcol = w^T @ gy, computed on a zero-padded gy grid.  The
    scatter-add back to pixels (col2im) is then a reduction over a strided view of dcol: for the input
    rows/cols congruent to (rh, rw) modulo the stride, the contributing taps and gy positions both
    advance by constant steps, so dcol addresses are affine in (tap index, pixel) and np.sum over the
    tap axes does the overlap-add.  Only the stride*stride phases are looped over.
    """
    N, O, OH, OW = gy.shape
    _, cg, KH, KW = w.shape
    H, W = in_hw
    (sh, sw), (dh, dw) = stride, dilation
    C = groups * cg
    rows = [_phase_taps(r, sh, pad_tl[0], dh, KH, OH, H) for r in range(min(sh, H))]
    cols = [_phase_taps(r, sw, pad_tl[1], dw, KW, OW, W) for r in range(min(sw, W))]
    top, bottom = (max([0] + [p[i] for p in rows if p]) for i in (2, 3))
    left, right = (max([0] + [p[i] for p in cols if p]) for i in (2, 3))
    gyp = _pad_crop(gy, top, bottom, left, right)
    OHp, OWp = gyp.shape[2:]
    fold = _fold(N, OHp * OWp, KH == KW == 1)
    wt, g = w.reshape(groups, O // groups, -1).swapaxes(1, 2), _to_cols_layout(gyp, groups, fold)
    if KH == KW == 1 and sh == sw == 1 and (OHp, OWp) == (H, W):
        return _from_cols_layout(_gemm(wt, g, fold), N, H, W, fold)
    dcol = np.matmul(wt, g, out=_scratch(1, g.shape[:2] + (wt.shape[1], g.shape[-1]), gy.dtype))
    L = dcol.shape[-1]
    s_n = OHp * OWp if fold else C * KH * KW * L
    s_c, s_kh, s_kw = KH * KW * L, KW * L, L
    flat = dcol.reshape(-1)
    gx = (np.empty if all(rows) and all(cols) else np.zeros)((N, C, H, W), gy.dtype)
    for rh, ph in enumerate(rows):
        for rw, pw in enumerate(cols):
            if ph is None or pw is None:
                continue
            (th, ddh, bh, _), (tw, ddw, bw, _) = ph, pw
            step_h = th[1] - th[0] if len(th) > 1 else 0
            step_w = tw[1] - tw[0] if len(tw) > 1 else 0
            start = th[0] * s_kh + tw[0] * s_kw + (top - bh) * OWp + (left - bw)
            view = as_strided(flat[start:], (N, C, len(th), len(tw), (H - rh + sh - 1) // sh, (W - rw + sw - 1) // sw),
                              tuple(dcol.itemsize * v for v in
                                    (s_n, s_c, step_h * s_kh + ddh * OWp, step_w * s_kw + ddw, OWp, 1)))
            if len(th) * len(tw) == 1:
                gx[:, :, rh::sh, rw::sw] = view[:, :, 0, 0]
            else:
                np.sum(view, axis=(2, 3), out=gx[:, :, rh::sh, rw::sw])
    return gx


def _data_grad_phases(gy, w, in_hw, stride, pad_tl, dilation, groups):
    """Input gradient as stride-1 correlations of gy with flipped sub-kernels, one per stride phase.

    The input rows/cols congruent to (rh, rw) modulo the stride only see a subset of the taps, so each
    of the stride*stride phases is an im2col + GEMM with no work spent on inserted zeros.
    """
    N, O, OH, OW = gy.shape
    _, cg, KH, KW = w.shape
    H, W = in_hw
    (sh, sw), (dh, dw) = stride, dilation
    og = O // groups
    if _winograd_ok(w.shape, stride, dilation, groups):
        pads = (2 - pad_tl[0], H - OH + pad_tl[0], 2 - pad_tl[1], W - OW + pad_tl[1])
        return _winograd_corr(gy, _winograd_weights(w, flip=True).transpose(0, 2, 1), pads)
    # (G, Cg, KH, KW, Og): rows of the transposed weight ordered like taps_first columns.
    wt = np.ascontiguousarray(w.reshape(groups, og, cg * KH * KW).transpose(0, 2, 1)).reshape(groups, cg, KH, KW, og)
    rows = [_phase_taps(r, sh, pad_tl[0], dh, KH, OH, H) for r in range(min(sh, H))]
    cols = [_phase_taps(r, sw, pad_tl[1], dw, KW, OW, W) for r in range(min(sw, W))]
    gx = None if sh == sw == 1 else np.zeros((N, groups * cg, H, W), gy.dtype)
    for rh, ph in enumerate(rows):
        for rw, pw in enumerate(cols):
            if ph is None or pw is None:
                continue
            col, qh, qw, fold = _im2col(gy, len(ph[0]), len(pw[0]), (1, 1), (ph[2], ph[3], pw[2], pw[3]),
                                        (ph[1], pw[1]), groups, taps_first=True)
            sub = wt[:, :, ph[0]][:, :, :, pw[0]].reshape(groups, cg, -1)
            if gx is None:  # stride 1: a single phase covering every pixel
                return _from_cols_layout(_gemm(sub, col, fold), N, qh, qw, fold)
            g = np.matmul(sub, col, out=_scratch(1, col.shape[:2] + (cg, col.shape[-1]), gy.dtype))
            gx[:, :, rh::sh, rw::sw] = _nchw_view(g, N, qh, qw, fold)
    return gx


def _scale_folds(x_shape, w_shape, stride, padding, dilation):
    """Whether an epilogue's per-channel scale is cheaper applied to the weight than to the output."""
    (N, _, H, W), (O, _, kh, kw) = x_shape, w_shape
    OH = _out_size(H + padding[0] + padding[1], kh, stride[0], dilation[0])
    OW = _out_size(W + padding[2] + padding[3], kw, stride[1], dilation[1])
    return math.prod(w_shape) * _SCALE_FOLD_RATIO <= N * O * OH * OW


def conv2d_forward(x, w, b, stride, padding, dilation, groups, weight_grad=True, epilogue=None):
    """conv2d of x (N,C,H,W) with w (O,C/groups,KH,KW) and optional bias b (O,).

    padding is (top, bottom, left, right).  Returns (y, saved) with saved a ConvSaved.
    ``weight_grad=False`` says no weight gradient will be asked for (inference), so the column
    matrix is built in reusable scratch instead of being kept for the backward.
    ``epilogue`` (an ``Epilogue``) is applied to the output (a graph's fused convolution), by depthwise
    layers inside their pipeline (see _depthwise_corr). The bias then joins its shift, and the scale
    multiplies the weight where the output is the much larger array (see _SCALE_FOLD_RATIO).
    """
    stride, dilation = _pair(stride), _pair(dilation)
    w = w.astype(x.dtype, copy=False)
    if epilogue is not None and b is not None:
        epilogue = epilogue.with_bias(b.astype(x.dtype, copy=False))
        b = None
    kernel = w
    if epilogue is not None and epilogue.scale is not None and _scale_folds(x.shape, w.shape, stride, padding,
                                                                            dilation):
        kernel = w * epilogue.scale.astype(x.dtype, copy=False).reshape(-1, 1, 1, 1)
        epilogue = epilogue._replace(scale=None)
    y, cols = _corr(x, kernel, stride, tuple(padding), dilation, groups, weight_grad, epilogue)
    if b is not None:
        y += b.astype(x.dtype, copy=False).reshape(-1, 1, 1)
    return y, ConvSaved(x, w, stride, tuple(padding), dilation, groups, cols)


def conv_epilogue(y, epilogue):
    """On a convolution's (N, C, ...) output, the ``Epilogue``: ``y * scale + shift`` per channel
    (``+ shift`` alone when scale is None), ``+ residual``, then the activation; all of it in one pass
    over cache-sized row blocks on the threads, with eager's arithmetic, in place (on a contiguous copy
    of a strided y). Returns the result."""
    n, c = y.shape[:2]
    y = np.ascontiguousarray(y)
    rows = y.reshape(n * c, math.prod(y.shape[2:]))
    parallel_blocks(with_row_buffer(_row_epilogue(rows, n, epilogue), rows.shape[1]),
                    n * c, rows.shape[1] * y.itemsize, _NEAR_GEMM_MIN_BYTES)
    return y


def _row_epilogue(rows, n, epilogue):
    """``apply(lo, hi)``: conv_epilogue's arithmetic on rows [lo, hi) of a convolution's output taken
    as (N*C, pixels) ``rows``, in place."""
    scale, shift, residual, activation = epilogue
    extra = residual.reshape(rows.shape) if residual is not None else None
    scale, shift = (None if v is None else np.tile(v.astype(rows.dtype, copy=False), n)[:, None]
                    for v in (scale, shift))

    def apply(lo, hi):
        r = rows[lo:hi]
        if scale is not None:
            r *= scale[lo:hi]
        if shift is not None:
            r += shift[lo:hi]
        if extra is not None:
            r += extra[lo:hi]
        if activation == "relu":
            np.clip(r, 0, np.inf, out=r)  # vectorised, unlike maximum with a scalar (see ops.activation)
        elif activation == "hardswish":
            gate = np.add(r, 3)
            np.clip(gate, 0, 6, out=gate)
            r *= gate
            r *= 1 / 6
        elif activation == "hardsigmoid":  # relu6(x + 3) / 6, the eager Hardsigmoid's operations
            r += 3
            np.clip(r, 0, 6, out=r)
            r *= 1 / 6
        elif activation == "silu":  # x * (1 / (1 + exp(-x))), the eager SiLU's operations
            gate = np.negative(r)
            with np.errstate(over="ignore"):
                np.exp(gate, out=gate)
            gate += 1
            np.reciprocal(gate, out=gate)
            r *= gate
        elif activation == "gelu":  # x * (1 + erf(x / sqrt 2)) / 2, the eager GELU's
            r[...] = 0.5 * r * (1 + erf(np, r * (1 / math.sqrt(2.0))))
        elif activation is not None:
            np.clip(r, activation[1], activation[2], out=r)
    return apply


def _tapwise_backward(gy, s, rows, cols, needs_x, needs_w):
    """conv2d_backward's (gx, gw) as _tapwise_corr's forward runs, for the same layers: one GEMM per kernel
    tap over the block of outputs whose windows read that tap inside the input, so that taps in the padding
    cost neither time nor memory. col2im's buffer, the column matrix padded by the kernel's reach, made
    the backward of DeepLabV3's ASPP layers at batch 2 (2048 to 256 channels, float32; tracemalloc's peak,
    best time of one process) cost, before -> after (PyTorch: its time):
    8x10 map, rate 36 (only the centre tap reads the input): 1039 -> 26 MiB, 700 -> 9 ms (48 ms);
    33x33, rate 24: 1204 -> 83 MiB, 774 -> 159 ms (337 ms); 65x65, rate 12: 1968 -> 340 MiB, 1405 -> 1239 ms
    (970 ms). resnet18's training step on 64x3x16x16 (3x3 layers on 1x1 and 2x2 maps): 147 -> 124 ms."""
    x, w, groups = s.x, s.w, s.groups
    (sh, sw), (dh, dw) = s.stride, s.dilation
    O, cg = w.shape[:2]
    gx = np.zeros(x.shape, gy.dtype) if needs_x else None
    gw = np.zeros(w.shape, gy.dtype) if needs_w else None
    for (i, (o0, o1)), (j, (p0, p1)) in itertools.product(enumerate(rows), enumerate(cols)):
        if o0 == o1 or p0 == p1:
            continue
        h0, w0 = o0 * sh - s.pads[0] + i * dh, p0 * sw - s.pads[2] + j * dw
        window = (slice(None), slice(None), slice(h0, h0 + (o1 - o0 - 1) * sh + 1, sh),
                  slice(w0, w0 + (p1 - p0 - 1) * sw + 1, sw))
        g = _batch_columns(gy[:, :, o0:o1, p0:p1], groups, 0)
        if needs_x:
            tap = w[:, :, i, j].reshape(groups, O // groups, cg).swapaxes(1, 2)
            product = np.matmul(tap, g, out=_scratch(1, (groups, cg, g.shape[-1]), gy.dtype))
            gx[window] += product.reshape(groups * cg, x.shape[0], o1 - o0, p1 - p0).swapaxes(0, 1)
        if needs_w:
            columns = _batch_columns(x[window], groups, 2)
            gw[:, :, i, j] = np.matmul(g, columns.swapaxes(1, 2)).reshape(O, cg)
    return gx, gw


def conv2d_backward(gy, saved, needs_x=True, needs_w=True, needs_b=True):
    """Gradients (gx, gw, gb) of conv2d from the output gradient gy; entries not needed are None."""
    s = saved
    gy = gy.astype(s.w.dtype, copy=False)
    gx = gw = gb = None
    if (needs_x or needs_w) and not _is_depthwise(s.x.shape, s.w.shape, s.groups, s.stride):
        (H, W), (OH, OW), (kh, kw) = s.x.shape[2:], gy.shape[2:], s.w.shape[2:]
        rows = _tap_spans(H, OH, kh, s.stride[0], s.pads[0], s.dilation[0])
        cols = _tap_spans(W, OW, kw, s.stride[1], s.pads[2], s.dilation[1])
        if kh * kw > 1 and _padded_tap_share(rows, cols, (OH, OW)) > _MAX_PADDED_TAP_SHARE:
            gx, gw = _tapwise_backward(gy, s, rows, cols, needs_x, needs_w)
            needs_x = needs_w = False
    if needs_x:
        gx = _data_grad(gy, s.w, s.x.shape[2:], s.stride, (s.pads[0], s.pads[2]), s.dilation, s.groups)
    if needs_w:
        if s.cols is not None:
            col, fold = s.cols
        else:
            col, _, _, fold = _im2col(s.x, *s.w.shape[2:], s.stride, s.pads, s.dilation, s.groups)
        gw = _weight_grad(col, fold, gy, s.groups, s.w.shape)
    if needs_b:
        gb = gy.sum((0, 2, 3))
    return gx, gw, gb


def conv_transpose2d_forward(x, w, b, stride, padding, output_padding, dilation, groups):
    """conv_transpose2d of x (N,C_in,H,W) with torch's weight layout w (C_in,C_out/groups,KH,KW).

    padding and output_padding are per-axis pairs as in torch; the output size is
    (H-1)*stride - 2*padding + dilation*(K-1) + output_padding + 1.  Returns (y, saved).
    """
    stride, padding, output_padding, dilation = map(_pair, (stride, padding, output_padding, dilation))
    w = w.astype(x.dtype, copy=False)
    out_hw = tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
                   zip(x.shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
    y = _transpose_scatter(x, w, b, out_hw, stride, padding, dilation, groups)
    return y, ConvTransposeSaved(x, w, stride, padding, output_padding, dilation, groups)


def _transpose_scatter(x, w, b, out_hw, stride, padding, dilation, groups):
    """conv_transpose2d as one GEMM giving every tap's contribution, then a strided add per tap.

    cols = w^T @ x computes, for each input pixel, what each of the KH*KW taps adds to the output;
    tap (kh, kw) lands on the output grid at (kh*d + i*s, kw*d + j*s), so one strided slice add per tap
    places it (on a canvas that also covers the cropped padding). Unlike the input-gradient algorithms
    (_data_grad), the GEMM does no work on zeros whatever the stride and kernel: on DCGAN's generator
    (batch 64) this took 8 / 47 / 61 / 83 / 18 ms per layer against 151 / 92 / 84 / 86 / 516 ms, and
    Mask R-CNN's 2x2 upsampling of 100 RoIs 168 against 259 ms.
    """
    N, C, H, W = x.shape
    _, og, KH, KW = w.shape
    cg = C // groups
    (sh, sw), (ph, pw), (dh, dw), (OH, OW) = stride, padding, dilation, out_hw
    xg = np.ascontiguousarray(x.reshape(N, groups, cg, H * W).transpose(1, 2, 0, 3)).reshape(groups, cg, N * H * W)
    cols = np.matmul(w.reshape(groups, cg, og * KH * KW).transpose(0, 2, 1), xg).reshape(groups, og, KH, KW, N, H, W)
    canvas = np.zeros((groups, og, N, max((H - 1) * sh + dh * (KH - 1) + 1, ph + OH),
                       max((W - 1) * sw + dw * (KW - 1) + 1, pw + OW)), x.dtype)

    def place(lo, hi):  # the samples lo:hi, every tap
        for kh in range(KH):
            for kw in range(KW):
                rows = slice(kh * dh, kh * dh + (H - 1) * sh + 1, sh)
                columns = slice(kw * dw, kw * dw + (W - 1) * sw + 1, sw)
                canvas[:, :, lo:hi, rows, columns] += cols[:, :, kh, kw, lo:hi]

    parallel_chunks(place, N, cols.nbytes)
    y = canvas[:, :, :, ph:ph + OH, pw:pw + OW].reshape(groups * og, N, OH, OW).transpose(1, 0, 2, 3)
    if b is None:
        return np.ascontiguousarray(y)
    return np.add(y, b.astype(x.dtype, copy=False).reshape(-1, 1, 1), out=np.empty((N, groups * og, OH, OW), x.dtype))


def conv_transpose2d_backward(gy, saved, needs_x=True, needs_w=True, needs_b=True):
    """Gradients (gx, gw, gb) of conv_transpose2d: gx is a plain convolution of gy, gw shares its columns."""
    s = saved
    gy = gy.astype(s.w.dtype, copy=False)
    (ph, pw), (oph, opw) = s.padding, s.output_padding
    gx = gw = gb = None
    if needs_x or needs_w:
        # Bottom/right padding p - output_padding makes the correlation land exactly on x's H x W grid.
        col, _, _, fold = _im2col(gy, *s.w.shape[2:], s.stride, (ph, ph - oph, pw, pw - opw), s.dilation, s.groups)
        if needs_x:
            cin = s.w.shape[0]
            gx = _from_cols_layout(_gemm(s.w.reshape(s.groups, cin // s.groups, -1), col, fold),
                                   gy.shape[0], *s.x.shape[2:], fold)
        if needs_w:
            gw = _weight_grad(col, fold, s.x, s.groups, s.w.shape)
    if needs_b:
        gb = gy.sum((0, 2, 3))
    return gx, gw, gb
