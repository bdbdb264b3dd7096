"""The notebooks as committed: each is either one complete top-to-bottom run or has no outputs at all,
and the migration notebook (the one that needs no download) is stored with its run's outputs."""
import json
import os
import re

import pytest

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "notebooks")
# stored with outputs: they run offline as they are. The others need downloads (ImageNet/COCO weights, the
# hymenoptera photos) that the machine committing them may not have, so they are stored clean.
STORED_RUNS = ("migrate_from_pytorch.ipynb",)


def _code_cells(name):
    with open(os.path.join(NOTEBOOKS, name), encoding="utf-8") as f:
        return [cell for cell in json.load(f)["cells"] if cell["cell_type"] == "code"]


def _printed(cell):
    return "".join("".join(out["text"]) for out in cell["outputs"] if out["output_type"] == "stream")


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(NOTEBOOKS) if n.endswith(".ipynb")))
def test_one_complete_run_or_clean(name):
    cells = _code_cells(name)
    counts = [cell["execution_count"] for cell in cells]
    if name not in STORED_RUNS:
        assert counts == [None] * len(cells) and not any(cell["outputs"] for cell in cells)
        return
    assert counts == list(range(1, len(cells) + 1)), "cells were not run once each, top to bottom"
    assert not [out for cell in cells for out in cell["outputs"] if out["output_type"] == "error"]
    for cell in cells:
        if re.search(r"^\s*print\(", "".join(cell["source"]), re.M):
            assert _printed(cell).strip(), f"a printing cell has no stored output: {''.join(cell['source'])[:60]!r}"


def test_migration_outputs_show_parity():
    text = "".join(_printed(cell) for cell in _code_cells("migrate_from_pytorch.ipynb"))
    errors = re.findall(r"(?:flowvision vs PyTorch|graph vs eager): max abs diff \S+, relative error (\S+)", text)
    assert len(errors) == 2 and all(float(e) < 1e-5 for e in errors)
    assert "same predictions: True" in text
    assert "missing keys ['fc.weight', 'fc.bias'], unexpected keys []" in text
    assert re.search(r"flowvision graph: +\d+\.\d ms per batch of 2 at 224x224", text)
