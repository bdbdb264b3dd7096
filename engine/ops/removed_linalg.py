"""The linear-algebra functions PyTorch removed in 1.9 but still names (``torch.cholesky``, ``torch.qr``,
``torch.solve``, ``torch.eig``, ``torch.lstsq``, ``torch.symeig``, ``torch.matrix_rank``): each raises PyTorch's
error, which names the ``torch.linalg`` function to call instead, so old code fails the same way and says how to
fix it."""
from ..tensor import register_method

REPLACEMENTS = {  # name: how the removed call is written with torch.linalg
    "cholesky": "L = torch.linalg.cholesky(A), or U = torch.linalg.cholesky(A).mH for upper=True",
    "qr": "Q, R = torch.linalg.qr(A) for some=True, torch.linalg.qr(A, mode='complete') for some=False",
    "solve": "X = torch.linalg.solve(A, B) (arguments reversed, no LU factorization returned)",
    "eig": "L, V = torch.linalg.eig(A) (complex results), or torch.linalg.eigvals(A) for eigenvalues only",
    "lstsq": "X = torch.linalg.lstsq(A, B).solution (arguments reversed)",
    "symeig": "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L'), or torch.linalg.eigvalsh for eigenvalues only",
    "matrix_rank": "torch.linalg.matrix_rank(A)",
}


def _removed(name):
    def removed(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. `torch.{name}` is "
                           f"deprecated in favor of `torch.linalg`: {REPLACEMENTS[name]}")
    removed.__name__ = name
    removed.__doc__ = "Removed from PyTorch in 1.9: raises its error (see ``torch.linalg``)."
    return removed


for _name in REPLACEMENTS:
    globals()[_name] = _removed(_name)
    if _name != "matrix_rank":  # torch.Tensor never had it
        register_method(globals()[_name], _name)

__all__ = list(REPLACEMENTS)
