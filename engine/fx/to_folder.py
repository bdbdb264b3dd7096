"""``GraphModule.to_folder``: a traced module as a Python package of its own, as torch.fx writes it: the class in
``module.py`` (its submodules, buffers and parameters made in ``__init__``, the generated ``forward`` below), the
weights in ``state_dict.pt``, which ``__init__`` loads."""
import pickle
import types
import warnings
from pathlib import Path

#: the layers whose repr is the call that rebuilds them (torch's list)
_SAFE_REPRS = ("Linear", "Conv1d", "Conv2d", "Conv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d")


def _indent(text):
    first, *rest = text.split("\n")
    return "\n".join([first] + [f"    {line}" if line.strip() else "" for line in rest])


def write_folder(gm, folder, module_name):
    """Write ``gm`` to ``folder`` as ``module_name`` (see ``GraphModule.to_folder``)."""
    import engine
    from .. import nn
    folder = Path(folder)
    folder.mkdir(exist_ok=True)
    engine.save(gm.state_dict(), folder / "state_dict.pt")
    imports = [f"import {m.__name__} as {alias}" if alias != m.__name__ else f"import {alias}"
               for alias, m in gm.graph.python_code("self").globals.items()
               if isinstance(m, types.ModuleType) and alias != "engine"]
    lines = ["", "import engine", "from math import inf", "from math import nan", "NoneType = type(None)",
             *imports, "", "from engine.nn import *", f"class {module_name}(engine.nn.Module):",
             "    def __init__(self):", "        super().__init__()"]
    pickled = []
    for name, child in gm.named_children():
        if type(child).__name__ in _SAFE_REPRS and getattr(nn, type(child).__name__, None) is type(child):
            lines.append(f"        setattr(self, '{name}', {child!r})")
            continue
        path = folder / f"{name}.pt"
        with open(path, "wb") as f:
            pickle.dump(child, f)
        pickled.append(name)
        summary = repr(child).replace("\r", " ").replace("\n", " ")
        lines.append(f"        with open(r'{path}', 'rb') as f:  # {summary}")
        lines.append(f"            self.{name} = __import__('pickle').load(f)")
    for name, buffer in gm._buffers.items():
        if buffer is not None:
            lines.append(f"        self.register_buffer('{name}', engine.empty({list(buffer.shape)}, "
                         f"dtype={buffer.dtype}))")
    for name, param in gm._parameters.items():
        if param is not None:
            lines.append(f"        setattr(self, '{name}', engine.nn.Parameter(engine.empty({list(param.shape)}, "
                         f"dtype={param.dtype})))")
    lines.append(f"        self.load_state_dict(engine.load(r'{folder}/state_dict.pt'))")
    text = "\n".join(lines) + "\n" + _indent(gm.code) + "\n"
    (folder / "module.py").write_text(text)
    (folder / "__init__.py").write_text("from .module import *")
    if pickled:
        warnings.warn("Was not able to save the following children modules as reprs -saved as pickled files "
                      f"instead: {pickled}")
