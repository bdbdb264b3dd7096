"""The op library: every op is a small ``Function``; this package gathers the public functions."""
import sys as _sys
from .convert import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .ranges import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .scan import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .rearrange import *  # noqa: F401,F403
from .histogram import *  # noqa: F401,F403
from .quantiles import *  # noqa: F401,F403
from .real_tensors import *  # noqa: F401,F403
from .complex_views import *  # noqa: F401,F403  (after real_tensors: the complex forms of real, imag, conj...)
from .complex_math import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .index_sets import *  # noqa: F401,F403
from .order_stats import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .scatter_reductions import *  # noqa: F401,F403
from .type_info import *  # noqa: F401,F403
from .windows import *  # noqa: F401,F403

from . import (activation as _a, convert as _cv, creation as _cr, elementwise as _e, indexing as _i,  # noqa: E402
               linalg as _l, pointwise as _pw, reduction as _r, shape as _sh, sorting as _so, special as _sp,
               scan as _sc, products as _pr, rearrange as _re, histogram as _h, quantiles as _q,
               real_tensors as _rt, index_sets as _is, order_stats as _os, statistics as _st, scatter_reductions as _sr,
               type_info as _ti, windows as _w, ranges as _rg, complex_views as _cx, complex_math as _cm,
               spectral as _sf)
from . import inplace  # noqa: E402,F401  (the in-place twins of the ops above, made from them)

# ops made from those above: torch's top-level twins of nn.functional, copying views, legacy names (the modules are
# bound first: index_reduce and vander export functions of their own names)
from . import (functional_aliases as _fa, view_copies as _vc, method_forms as _mf, integration as _ig,  # noqa: E402
               index_reduce as _ir, random_counts as _rc, legacy_creation as _lc, vander as _vd, legacy_linalg as _ll,
               incomplete_gamma as _gi, removed_linalg as _rl)
from .functional_aliases import *  # noqa: E402,F401,F403
from .view_copies import *  # noqa: E402,F401,F403
from .method_forms import *  # noqa: E402,F401,F403
from .integration import *  # noqa: E402,F401,F403
from .index_reduce import *  # noqa: E402,F401,F403
from .random_counts import *  # noqa: E402,F401,F403
from .legacy_creation import *  # noqa: E402,F401,F403
from .vander import *  # noqa: E402,F401,F403
from .legacy_linalg import *  # noqa: E402,F401,F403
from .incomplete_gamma import *  # noqa: E402,F401,F403
from .removed_linalg import *  # noqa: E402,F401,F403

# memory geometry at creation, binned counts, finite differences, Householder QR, randomized low-rank factorizations,
# segment reductions
from . import (memory_layout_creation as _ml, binned_histograms as _bh, finite_differences as _fd,  # noqa: E402
               padded_nonzero as _pn, householder as _hh, low_rank as _lr, segment_reduction as _sg, asarray as _aa)
from .memory_layout_creation import *  # noqa: E402,F401,F403
from .binned_histograms import *  # noqa: E402,F401,F403
from .finite_differences import *  # noqa: E402,F401,F403
from .padded_nonzero import *  # noqa: E402,F401,F403
from .householder import *  # noqa: E402,F401,F403
from .low_rank import *  # noqa: E402,F401,F403
from .segment_reduction import *  # noqa: E402,F401,F403
from .asarray import *  # noqa: E402,F401,F403

# aten's native norms and dropout, SyncBatchNorm's kernels, convolution entry points, grid samplers, legacy norms,
# functional RNNs
from . import (native_norms as _nn, sync_batch_norm_kernels as _sb, aten_convolution as _ac,  # noqa: E402
               aten_sampling as _as, legacy_norms as _lg, functional_rnn as _fr)
from .native_norms import *  # noqa: E402,F401,F403
from .sync_batch_norm_kernels import *  # noqa: E402,F401,F403
from .aten_convolution import *  # noqa: E402,F401,F403
from .aten_sampling import *  # noqa: E402,F401,F403
from .legacy_norms import *  # noqa: E402,F401,F403
from .functional_rnn import *  # noqa: E402,F401,F403

# a tensor's values hashed to one 64-bit word
from . import hashing as _hs  # noqa: E402
from .hashing import *  # noqa: E402,F401,F403

# torch.inverse is torch.linalg.inv, LinAlgError included (linalg_solvers imports linalg, so it binds here, last)
from .linalg_solvers import inv as _inv  # noqa: E402
from ..tensor import register_method as _register_method  # noqa: E402


def inverse(input, *, out=None):
    """``torch.linalg.inv`` under ``torch.inverse``'s argument name."""
    return _inv(input, out=out)


_register_method(inverse, "inverse")

# torch's out= for the functions whose own code has none (after every name above is bound)
from .out_arguments import give_out_arguments as _give_out_arguments  # noqa: E402
_give_out_arguments(globals())

__all__ = [name for module in (_a, _cv, _cr, _e, _i, _l, _pw, _r, _sh, _so, _sp, _sc, _pr, _re, _h, _q,
                              _rt, _is, _os, _st, _sr, _ti, _w, _rg, _cx, _cm, _sf,
                              _fa, _vc, _mf, _ig, _ir, _rc, _lc, _vd, _ll, _gi, _rl, _ml, _bh, _fd, _pn, _hh, _lr,
                              _sg, _aa, _nn, _sb, _ac, _as, _lg, _fr, _hs)
           for name in module.__all__]


def __getattr__(name):
    """torch.ops's namespaces: ``engine.ops.mylib.mysin`` is the operator registered as "mylib::mysin" through
    engine.library; AttributeError for any other name, so ``from engine.ops import <submodule>`` still imports the
    submodule."""
    registry = _sys.modules.get("engine.library._registry")
    if registry is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return registry.namespace(name)
