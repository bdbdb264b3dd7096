"""``BlockMask``: flex_attention's block-sparse mask (PyTorch's format), and its conversions.

The mask of an (L, S) score matrix is cut into Q_BLOCK_SIZE x KV_BLOCK_SIZE tiles. Per (batch, head) and
query-block row, ``kv_num_blocks[row]`` counts the tiles that are computed and the first that many entries
of ``kv_indices[row]`` name their columns. Tiles in (``kv_num_blocks``, ``kv_indices``) are "partial":
``mask_mod`` is applied inside them. The optional (``full_kv_num_blocks``, ``full_kv_indices``) name
"full" tiles, used without ``mask_mod``. ``q_num_blocks``/``q_indices`` (and the full pair) are the same
lists by key-block column, derived for the backward pass of fused kernels. Tiles in neither list are
skipped (masked). The deterministic-backward metadata of PyTorch's FLASH kernels (``dq_write_order`` and
relatives) is carried through untouched: the engine's eager flex_attention has no use for it.
"""
import itertools
import math

from ... import ops
from ..._dtype import bool_ as _bool, int32 as _int32

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


def _cdiv(a, b):
    return (a + b - 1) // b


def noop_mask(batch, head, token_q, token_kv):
    """A mask_mod that keeps every position."""
    return batch.new_ones((), dtype=_bool, device=batch.device)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    """The mask_mod of a sliced BlockMask: its positions no longer match the original's."""
    raise RuntimeError("Cannot use mask_mod from a sliced BlockMask. When you slice a BlockMask using [], the "
                       "mask_mod attribute is reset. You must set it from the original BlockMask's mask_mod.")


def _ordered_to_dense(num_blocks_in_row, col_indices, num_cols):
    """(..., rows) counts and (..., rows, entries) column lists -> (..., rows, num_cols) int32 0/1 tiles."""
    entries = col_indices.shape[-1]
    device = col_indices.device
    valid = ops.arange(entries, device=device) < num_blocks_in_row.unsqueeze(-1)
    hits = col_indices.long().unsqueeze(-1) == ops.arange(num_cols, device=device)
    return (hits & valid.unsqueeze(-1)).any(dim=-2).to(_int32)


def _dense_to_ordered(dense_mask):
    """(..., rows, cols) 0/1 tiles -> the counts per row and the columns, set ones first (stable order)."""
    dense_mask = dense_mask.to(_int32)
    num_blocks_in_row = dense_mask.sum(dim=-1).to(_int32)
    col_indices = ops.argsort(dense_mask, dim=-1, descending=True, stable=True).to(_int32)
    return num_blocks_in_row, col_indices


def _transpose_ordered(num_blocks_in_row, col_indices, num_cols=None):
    """The same tiles listed by column instead of by row."""
    num_cols = col_indices.shape[-1] if num_cols is None else num_cols
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, num_cols)
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks, indices, new_num_rows, new_num_cols):
    """Crop an ordered tile list to the first rows and columns (entries past a row's count are ignored)."""
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    valid = ops.arange(indices.shape[-1], device=indices.device) < num_blocks.unsqueeze(-1)
    num_blocks = (valid & (indices < new_num_cols)).sum(dim=-1).to(_int32)
    return num_blocks, indices


class BlockMask:
    """Block-sparse attention mask; build it with ``create_block_mask`` or ``BlockMask.from_kv_blocks``."""

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                     "q_indices", "full_q_num_blocks", "full_q_indices", "dq_write_order", "dq_write_order_full",
                     "dq_kv_order"]
    _CONTEXT_ATTRS = ["seq_lengths", "BLOCK_SIZE", "mask_mod", "dq_kv_order_spt"]

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks,
                 q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE), mask_mod=noop_mask, *,
                 dq_write_order=None, dq_write_order_full=None, dq_kv_order=None, dq_kv_order_spt=None):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError("full_q_num_blocks and full_q_indices must be both provided or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.dq_write_order, self.dq_write_order_full = dq_write_order, dq_write_order_full
        self.dq_kv_order, self.dq_kv_order_spt = dq_kv_order, dq_kv_order_spt
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                       BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, mask_mod=None, seq_lengths=None, compute_q_blocks=True,
                       *, dq_write_order=None, dq_write_order_full=None, dq_kv_order=None):
        """A BlockMask from its key-block lists; the query-block lists are derived (``compute_q_blocks``).
        ``seq_lengths`` defaults to the tile grid times ``BLOCK_SIZE``."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if dq_kv_order is not None and not isinstance(dq_kv_order, bool) and not hasattr(dq_kv_order, "shape"):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0], kv_indices.shape[-1] * BLOCK_SIZE[1])
        kv_num_cols = _cdiv(seq_lengths[1], BLOCK_SIZE[1])
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices, kv_num_cols)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks, full_kv_indices,
                                                                       kv_num_cols)
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks,
                   q_indices, full_q_num_blocks, full_q_indices, BLOCK_SIZE,
                   noop_mask if mask_mod is None else mask_mod, dq_write_order=dq_write_order,
                   dq_write_order_full=dq_write_order_full,
                   dq_kv_order=None if isinstance(dq_kv_order, (bool, type(None))) else dq_kv_order,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten=True):
        """The attributes in PyTorch's order (``flatten`` splits seq_lengths and BLOCK_SIZE into ints)."""
        seq_lengths = self.seq_lengths if flatten else (self.seq_lengths,)
        block_size = self.BLOCK_SIZE if flatten else (self.BLOCK_SIZE,)
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks, self.full_kv_indices,
                self.q_num_blocks, self.q_indices, self.full_q_num_blocks, self.full_q_indices,
                self.dq_write_order, self.dq_write_order_full, self.dq_kv_order, self.dq_kv_order_spt,
                *block_size, self.mask_mod)

    @property
    def shape(self):
        """(B, H, Q_LEN, KV_LEN), with the B and H of the tile lists (1 where broadcast)."""
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def numel(self):
        """The number of positions the mask covers (sparsity not counted)."""
        return math.prod(self.shape)

    def sparsity(self):
        """The percentage of tiles skipped (neither partial nor full)."""
        total = math.prod(self.kv_num_blocks.shape[:-1])
        for seq_len, block_size in zip(self.seq_lengths, self.BLOCK_SIZE):
            total *= _cdiv(seq_len, block_size)
        computed = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - computed / total)

    def to_dense(self):
        """The (B, H, rows, cols) int32 0/1 tiles that are computed (partial or full)."""
        dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            full = _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices, self.full_kv_indices.shape[-1])
            dense = dense | full
        return dense

    def _tiles(self):
        """(partial, full or None) boolean tiles (B, H, rows, cols) over the tile grid of ``seq_lengths``."""
        cols = max(self.kv_indices.shape[-1], _cdiv(self.seq_lengths[1], self.BLOCK_SIZE[1]))
        partial = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, cols).bool()
        if self.full_kv_num_blocks is None:
            return partial, None
        return partial, _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices, cols).bool()

    def to_string(self, grid_size=(20, 20), limit=4):
        """A picture of the tiles per (batch, head): full squares computed, light ones partly (when the grid
        is coarser than the tiles), blanks skipped; ``grid_size`` -1 draws every tile."""
        dense = self.to_dense().cpu().numpy()
        *batch_dims, num_rows, num_cols = dense.shape
        if isinstance(grid_size, int) and grid_size != -1:
            max_rows = max_cols = grid_size
        elif grid_size == -1:
            max_rows, max_cols = num_rows, num_cols
        else:
            max_rows, max_cols = grid_size
        row_step, col_step = max(1, _cdiv(num_rows, max_rows)), max(1, _cdiv(num_cols, max_cols))

        def draw(tiles):
            lines = []
            for r in range(0, num_rows, row_step):
                line = ""
                for c in range(0, num_cols, col_step):
                    share = tiles[r:r + row_step, c:c + col_step].astype("float32").mean()
                    line += ("█" if share == 1 else " " if share == 0 else "░") * 2
                lines.append(line + "\n")
            return "".join(lines)

        pictures = []
        for count, index in enumerate(itertools.product(*[range(n) for n in batch_dims])):
            if count == limit:
                pictures += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                             "You can also index (BlockMask[batch, head]) to choose a specific batch or head"]
                break
            pictures.append(f"{index}\n" + draw(dense[index]))
        return "\n".join(pictures)

    def __str__(self):
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n{self.to_string().strip()}\n)"

    def __repr__(self):
        def shape_of(t):
            return None if t is None else t.shape
        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return ("BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_of(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_of(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_of(self.q_num_blocks)},\n"
                f"    q_indices={shape_of(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_of(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_of(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                ")")

    def _query_length(self, q_index, selected_rows):
        """The number of query tokens in the selected query-block rows (a partial last block counted as such
        for int and slice selections)."""
        q_block = self.BLOCK_SIZE[0]
        if not isinstance(q_index, slice):
            return selected_rows * q_block
        rows = range(self.kv_num_blocks.shape[-1])[q_index]
        if len(rows) == 0:
            return 0
        if rows.step == 1:
            return min(rows.stop * q_block, self.seq_lengths[0]) - min(rows.start * q_block, self.seq_lengths[0])
        length = len(rows) * q_block
        trailing = self.seq_lengths[0] % q_block
        if trailing and self.kv_num_blocks.shape[-1] - 1 in rows:
            length -= q_block - trailing
        return length

    def __getitem__(self, index):
        """A BlockMask of the selected batch, head and query-block rows (ints keep their dimension). Its
        mask_mod is unusable (positions moved): install one made for the slice."""
        if self.dq_kv_order is not None:
            raise NotImplementedError("Slicing BlockMask with tensor dq_kv_order is not supported yet. Construct "
                                      "a new BlockMask with matching precomputed dq_write_order metadata.")
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > 3:
            raise IndexError("BlockMask indexing supports batch, head, and Q-block dimensions")
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1)) if isinstance(i, int) else i
                      for i, n in zip(padded, self.kv_num_blocks.shape[:3]))
        kv_indices = self.kv_indices[index]
        full = (None, None) if self.full_kv_num_blocks is None else (self.full_kv_num_blocks[index],
                                                                     self.full_kv_indices[index])
        sliced = BlockMask.from_kv_blocks(self.kv_num_blocks[index], kv_indices, *full, BLOCK_SIZE=self.BLOCK_SIZE,
                                          mask_mod=_sliced_mask_mod_error,
                                          seq_lengths=(self._query_length(index[2], kv_indices.shape[-2]),
                                                       self.seq_lengths[1]),
                                          compute_q_blocks=self.q_indices is not None)
        sliced.dq_kv_order_spt = self.dq_kv_order_spt
        return sliced

    def _adjust(self, new_q_len, new_kv_len):
        """The mask cropped to its upper-left (new_q_len, new_kv_len) corner."""
        rows, cols = _cdiv(new_q_len, self.BLOCK_SIZE[0]), _cdiv(new_kv_len, self.BLOCK_SIZE[1])
        partial = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, rows, cols)
        full = (None, None) if self.full_kv_num_blocks is None else _adjust_num_blocks_and_indices(
            self.full_kv_num_blocks, self.full_kv_indices, rows, cols)
        return self.from_kv_blocks(*partial, *full, BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                   seq_lengths=(new_q_len, new_kv_len), compute_q_blocks=self.q_indices is not None)

    def to(self, device):
        """The same mask with its tensors on ``device``."""
        moved = BlockMask.__new__(BlockMask)
        moved.__dict__.update(self.__dict__)
        for name in self._TENSOR_ATTRS:
            value = getattr(self, name)
            if value is not None and hasattr(value, "to"):
                setattr(moved, name, value.to(device))
        return moved
