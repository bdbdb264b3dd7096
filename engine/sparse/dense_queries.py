"""The sparse accessors on dense (strided) tensors, as torch answers them: ``sparse_dim()`` 0 and ``dense_dim()``
ndim, and torch's layout error for the index and value accessors (also what a sparse layout lacks: a CSR
tensor's ``coalesce``); plus the ``*_copy`` forms of the accessors."""
from ..tensor import Tensor, register_method


def _refusal(name, expected):
    def refuse(self):
        layout = self._layout_title() if hasattr(self, "_layout_title") else "Strided"
        raise RuntimeError(f"{name} expected {expected} tensor layout but got {layout}")
    refuse.__name__ = name
    refuse.__doc__ = f"``{name}`` of a tensor of another layout: torch's layout error."
    return refuse


_ACCESSORS = {"indices": "sparse coordinate", "coalesce": "sparse coordinate", "is_coalesced": "sparse coordinate",
              "values": "sparse", "crow_indices": "sparse row compressed", "col_indices": "sparse row compressed",
              "ccol_indices": "sparse column compressed", "row_indices": "sparse column compressed"}
for _name, _expected in _ACCESSORS.items():
    register_method(_refusal(_name, _expected))


def sparse_dim(self):
    return 0


def dense_dim(self):
    return self.ndim


register_method(sparse_dim)
register_method(dense_dim)


def _copying(name):
    def copy(input):
        out = getattr(input, name)()
        return out.clone() if isinstance(out, Tensor) else out
    copy.__name__ = f"{name}_copy"
    copy.__doc__ = f"``torch.{name}_copy``: a copy of ``input.{name}()``."
    return copy


indices_copy = _copying("indices")
values_copy = _copying("values")
crow_indices_copy = _copying("crow_indices")
col_indices_copy = _copying("col_indices")
ccol_indices_copy = _copying("ccol_indices")
row_indices_copy = _copying("row_indices")

__all__ = ["indices_copy", "values_copy", "crow_indices_copy", "col_indices_copy", "ccol_indices_copy",
           "row_indices_copy"]
