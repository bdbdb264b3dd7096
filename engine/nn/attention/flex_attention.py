"""``flex_attention`` (PyTorch's ``torch.nn.attention.flex_attention``; Dong et al. 2024, "Flex Attention: A
Programming Model for Generating Optimized Attention Kernels"), evaluated eagerly.

The (B, H, L, S) score matrix is materialised (in float64 for float64 inputs, float32 otherwise), scaled,
passed through ``score_mod`` and masked to -inf where the ``block_mask`` excludes a position, then
softmax-ed and multiplied with the values. ``score_mod(score, b, h, q_idx, kv_idx)`` and
``mask_mod(b, h, q_idx, kv_idx)`` are called once, on whole tensors: ``score`` (B, H, L, S) and the int64
index tensors ``b`` (B, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, L, 1), ``kv_idx`` (1, 1, 1, S), so
any function written for PyTorch's per-element (vmapped) calls that uses elementwise ops and indexing of
captured tensors (``bias[h, q_idx, kv_idx]``) gives the same values, broadcast to (B, H, L, S). Being engine
ops, gradients reach query, key, value and every tensor the functions capture (a learned bias).

A position is kept where its tile is a full tile of the block mask, or a partial tile and ``mask_mod`` keeps
it; tiles in neither list are skipped. This is the semantics of PyTorch's compiled kernels; for masks
from ``create_block_mask`` it equals PyTorch's eager reference, which applies ``mask_mod`` only. A query row
with every position masked gives zeros and a log-sum-exp of -inf, as in PyTorch.

Differences from PyTorch: backward works on the CPU (PyTorch refuses it there), ``max_scores`` is returned
on every device, there is no ``torch.compile`` (and no warning about its absence), and ``kernel_options``
are checked but have no effect.
"""
import math
import typing
import warnings
from typing import Callable, NamedTuple, TypedDict

from ... import ops
from ..._dtype import bool_ as _bool, float64 as _float64, float32 as _float32, int8 as _int8, int32 as _int32
from ...tensor import Tensor
from ..functional.attention import _masked_softmax
from ._block_mask import (_DEFAULT_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE, BlockMask, _dense_to_ordered,
                          _sliced_mask_mod_error, noop_mask)

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_Backend = typing.Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]

_NEG_INF = float("-inf")
_BLOCK_MASK_TOO_SMALL_ERROR = ("block_mask was created for a smaller length than you're using it for, you likely "
                               "need to create a new block mask.")
_BLOCK_MASK_TOO_LARGE_ERROR = ("block_mask was created for a larger length than you're using it for, you can either "
                               "1. create a new block mask with the correct length, or 2. 'adjust' the existing block "
                               "mask to the correct length by calling block_mask._adjust(q_len, kv_len). This "
                               "essentially 'crops' the block mask to the upper left corner, which does not work for "
                               "all mask_mods!")
_WARNINGS_SHOWN = set()


class FlexKernelOptions(TypedDict, total=False):
    """Options of PyTorch's fused flex kernels; accepted (``BACKEND`` checked) and without effect here."""
    BLOCK_M: int
    BLOCK_N: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    BACKEND: _Backend


class AuxRequest(NamedTuple):
    """Which auxiliary outputs flex_attention should return."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """flex_attention's auxiliary outputs (None where not requested): the log-sum-exp and the maximum of each
    query row's modified, masked scores, shape (B, H, L)."""
    lse: Tensor = None
    max_scores: Tensor = None


def _warn_once(warning_id, message, category=UserWarning):
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


def _is_score_mod(fn):
    """True for a score_mod (5 positional parameters without defaults), False for a mask_mod (4)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        count = code.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    else:
        import inspect
        count = sum(1 for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty)
    if count not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {count}")
    return count == 5


def _index_grids(B, H, Q_LEN, KV_LEN, device):
    """b, h, q_idx, kv_idx as int64 tensors on their own axis of (B, H, Q_LEN, KV_LEN)."""
    return (ops.arange(B, device=device).reshape(B, 1, 1, 1), ops.arange(H, device=device).reshape(1, H, 1, 1),
            ops.arange(Q_LEN, device=device).reshape(1, 1, Q_LEN, 1),
            ops.arange(KV_LEN, device=device).reshape(1, 1, 1, KV_LEN))


def _default_device():
    from ... import accelerator
    return accelerator.current_accelerator(check_available=True) or "cpu"


def or_masks(*mask_mods):
    """A mask_mod keeping the positions that any of ``mask_mods`` keeps."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_bool)
        for mask_mod in mask_mods:
            result = result | mask_mod(b, h, q_idx, kv_idx)
        return result
    return or_mask


def and_masks(*mask_mods):
    """A mask_mod keeping the positions that all of ``mask_mods`` keep."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_bool)
        for mask_mod in mask_mods:
            result = result & mask_mod(b, h, q_idx, kv_idx)
        return result
    return and_mask


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The (B, H, Q_LEN, KV_LEN) boolean mask of a mask_mod, or of a score_mod (False where it gives -inf
    for a zero score). B and H default to 1; ``device`` to the accelerator when one is usable, else the CPU."""
    device = _default_device() if device is None else device
    B, H = 1 if B is None else B, 1 if H is None else H
    grids = _index_grids(B, H, Q_LEN, KV_LEN, device)
    if _is_score_mod(mod_fn):
        out = mod_fn(ops.zeros(B, H, Q_LEN, KV_LEN, device=device), *grids)
        mask = ~ops.isneginf(out)
    else:
        mask = mod_fn(*grids)
    return mask.expand(B, H, Q_LEN, KV_LEN).contiguous()


def _mask_to_tiles(mask, q_block, kv_block, separate_full_blocks):
    """(B, H, L, S) booleans -> int8 tiles (B, H, rows, cols): partial (some but, with
    ``separate_full_blocks``, not all kept) and full (all kept; None without ``separate_full_blocks``)."""
    B, H, L, S = mask.shape
    rows, cols = -(-L // q_block), -(-S // kv_block)
    from ..functional.padding import pad
    padded = pad(mask, (0, cols * kv_block - S, 0, rows * q_block - L))
    counts = padded.reshape(B, H, rows, q_block, cols, kv_block).sum(dim=(-3, -1))
    if not separate_full_blocks:
        return (counts > 0).to(_int8), None
    whole = q_block * kv_block
    return ((counts > 0) & (counts < whole)).to(_int8), (counts == whole).to(_int8)


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile=False, separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """The BlockMask of ``mask_mod`` (b, h, q_idx, kv_idx) -> keep, over B x H (None: 1, broadcast) and
    Q_LEN x KV_LEN, in BLOCK_SIZE tiles (one int or (Q, KV)). ``_compile`` is deprecated (a warning, no
    effect); ``compute_dq_write_order`` (metadata for PyTorch's deterministic FLASH backward) is not built."""
    if _is_score_mod(mask_mod):
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    if _compile:
        warnings.warn("_compile flag on create_block_mask was originally added to work around a torch.compile "
                      "limitation. That limitation has since been addressed. So, to compile create_block_mask, we "
                      "suggest doing torch.compile(create_block_mask). This still works for now, but will be "
                      "removed in the future.", DeprecationWarning, stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial, full = _mask_to_tiles(mask, q_block, kv_block, separate_full_blocks)
    full_lists = (None, None) if full is None else _dense_to_ordered(full)
    return BlockMask.from_kv_blocks(*_dense_to_ordered(partial), *full_lists, BLOCK_SIZE=(q_block, kv_block),
                                    mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))


def _create_empty_block_mask(query):
    """The default block mask: one tile covering every position."""
    device = query.device
    return BlockMask.from_kv_blocks(ops.ones(1, 1, 1, dtype=_int32, device=device),
                                    ops.zeros(1, 1, 1, 1, dtype=_int32, device=device),
                                    BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE, seq_lengths=(1, 1))


def _kept_positions(block_mask, grids):
    """Booleans broadcastable to (B, H, L, S): True where the block mask keeps the position."""
    kept = block_mask.mask_mod(*grids)
    if block_mask.BLOCK_SIZE == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return kept
    _, _, q_idx, kv_idx = grids
    rows = (q_idx // block_mask.BLOCK_SIZE[0]).reshape(-1, 1)
    cols = (kv_idx // block_mask.BLOCK_SIZE[1]).reshape(1, -1)
    partial, full = block_mask._tiles()
    kept = partial[:, :, rows, cols] & kept
    return kept if full is None else kept | full[:, :, rows, cols]


def _validate(query, key, value, block_mask, enable_gqa):
    """PyTorch's checks of flex_attention's inputs, in its order and words."""
    if query.device != key.device or query.device != value.device:
        raise ValueError(f"Expected query, key, and value to have the same device type, but got query.device: "
                         f"{query.device}, key.device: {key.device}, and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                         f"{query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but got "
                         f"E={query.shape[-1]} and E={key.shape[-1]}.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not enable_gqa and query.shape[-3] != key.shape[-3]:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={query.shape[-3]} "
                         f"and Hkv={key.shape[-3]}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and query.shape[1] % key.shape[1]:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got "
                         f"Hq={query.shape[1]} and Hkv={key.shape[1]}.")
    if query.shape[0] != key.shape[0]:
        if block_mask is None:
            raise ValueError(f"Expect query and key/value to have the same batch size, or non-none block_mask, "
                             f"but got block_mask=None, Bq={query.shape[0]}, and Bkv={key.shape[0]}.")
        if block_mask.kv_num_blocks.shape[0] != query.shape[0]:
            raise ValueError(f"Expect query and key/value to have the same batch size, or block_mask and query to "
                             f"have the same batch size, but got Bq={query.shape[0]}, Bkv={key.shape[0]}, "
                             f"B_block_mask={block_mask.kv_num_blocks.shape[0]}.")


def _validate_block_mask(block_mask, query, key):
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if block_mask.BLOCK_SIZE != (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        q_len, kv_len = query.shape[-2], key.shape[-2]
        mask_q_len, mask_kv_len = block_mask.shape[-2:]
        if q_len > mask_q_len or kv_len > mask_kv_len:
            raise RuntimeError(_BLOCK_MASK_TOO_SMALL_ERROR)
        if q_len < mask_q_len or kv_len < mask_kv_len:
            raise RuntimeError(_BLOCK_MASK_TOO_LARGE_ERROR)
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got {query.device} and "
                           f"{block_mask.kv_num_blocks.device}.")


def _check_kernel_options(kernel_options):
    options = {} if kernel_options is None else dict(kernel_options)
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError("BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. BACKEND supersedes the "
                           "legacy knob; please drop FORCE_USE_FLEX_ATTENTION and only specify the desired BACKEND.")
    valid = typing.get_args(_Backend)
    if "BACKEND" in options and options["BACKEND"] not in valid:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. Must be one of {valid}")
    for name in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if name in options:
            raise AssertionError(f"{name} must not be in kernel_options")


def _logsumexp(scores):
    """log-sum-exp over the last dim; -inf (and no NaN gradient) for rows that are -inf throughout."""
    blocked = (scores == _NEG_INF).all(dim=-1)
    return ops.where(blocked, _NEG_INF, ops.where(blocked.unsqueeze(-1), 0.0, scores).logsumexp(-1))


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention with a score modification and a block-sparse mask: query (B, Hq, L, E), key (B or 1, Hkv, S,
    E), value (B or 1, Hkv, S, Ev), Hkv = Hq unless ``enable_gqa`` (Hq a multiple of Hkv). ``scale`` defaults
    to 1 / sqrt(E). Returns the output (B, Hq, L, Ev); with ``return_aux`` also an ``AuxOutput``, with the
    deprecated ``return_lse`` also the log-sum-exp (B, Hq, L). See the module docstring for the semantics."""
    _validate(query, key, value, block_mask, enable_gqa)
    if block_mask is None:
        block_mask = _create_empty_block_mask(query)
    _validate_block_mask(block_mask, query, key)
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
                         "return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse", "return_lse is deprecated and will be removed in v2.10. Please use "
                   "return_aux=AuxRequest(lse=True) instead.", FutureWarning)
    _check_kernel_options(kernel_options)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale

    groups = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    batch, kv_batch = query.shape[0], key.shape[0]
    if not (batch == kv_batch or (batch > 1 and kv_batch == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={batch} and Bkv={kv_batch}")
    key, value = key.expand(batch, *key.shape[1:]), value.expand(batch, *value.shape[1:])
    working = _float64 if query.dtype == _float64 else _float32
    scores = ops.matmul(query.to(working), key.to(working).transpose(-2, -1)) * scale
    grids = _index_grids(batch, query.shape[1], query.shape[2], key.shape[2], query.device)
    if score_mod is not None:
        scores = score_mod(scores, *grids)
    scores = ops.where(_kept_positions(block_mask, grids), scores, _NEG_INF).expand(
        batch, query.shape[1], query.shape[2], key.shape[2])
    out = ops.matmul(_masked_softmax(scores).to(query.dtype), value.to(query.dtype))

    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    want_max = return_aux is not None and return_aux.max_scores
    if not (want_lse or want_max):
        return out
    lse = _logsumexp(scores) if want_lse else None
    if return_aux is None:
        return out, lse
    return out, AuxOutput(lse=lse, max_scores=scores.amax(-1) if want_max else None)
