"""What ``import engine`` and ``import flowvision`` give without further imports, against ``import torch``
and ``import torchvision``: each check runs in a fresh interpreter that imports only the top package and
then reaches names attribute by attribute.

Two kinds of check: the names scripts reach for first (the ``*_NAMES`` lists), and a guard over every
package and module of ours whose dotted name torch (or torchvision) also has as a module reachable after
its top-level import: ours must be reachable the same way."""
import json
import pkgutil
import subprocess
import sys

import pytest

import engine
import flowvision

pytestmark = pytest.mark.slow  # fresh interpreters importing torch and torchvision: seconds each

ENGINE_NAMES = """
    utils.data utils.data.DataLoader utils.data.Dataset nn nn.functional nn.init nn.utils nn.parallel
    nn.parallel.DistributedDataParallel nn.DataParallel nn.SyncBatchNorm nn.modules optim optim.lr_scheduler
    optim.swa_utils backends backends.cudnn backends.cudnn.flags backends.cuda backends.cuda.matmul.allow_tf32
    backends.mps backends.mps.is_available backends.mkldnn backends.opt_einsum multiprocessing
    multiprocessing.spawn multiprocessing.Queue accelerator accelerator.memory accelerator.current_accelerator
    cuda cuda.is_available autograd autograd.Function autograd.grad random serialization linalg distributed
    onnx set_float32_matmul_precision use_deterministic_algorithms
""".split()
FLOWVISION_NAMES = """
    datasets datasets.ImageFolder models models.resnet50 models.detection models.segmentation transforms
    transforms.functional transforms.Compose utils utils.make_grid ops ops.nms io io.read_image io.decode_image
    io.write_png io.ImageReadMode
""".split()

_REACHABLE = """
import importlib, json, sys, types
top = importlib.import_module(sys.argv[1])
found = {}
for name in json.loads(sys.argv[2]):
    obj = top
    try:
        for part in name.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        continue
    found[name] = isinstance(obj, types.ModuleType)
print(json.dumps(found))
"""


def _reachable(top, names):
    """{name: whether it is a module} for each of ``names`` reachable from ``top`` in a fresh interpreter."""
    result = subprocess.run([sys.executable, "-c", _REACHABLE, top, json.dumps(names)], capture_output=True,
                            text=True, timeout=300, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _our_modules(package, skip=()):
    """Every public package and module of ``package``, dotted from below it (packages get imported to
    list their modules; modules do not)."""
    prefix = package.__name__ + "."
    names = []
    for info in pkgutil.walk_packages(package.__path__, prefix):
        dotted = info.name[len(prefix):]
        if any(part.startswith("_") for part in dotted.split(".")) or dotted.split(".")[0] in skip:
            continue
        names.append(dotted)
    return names


@pytest.mark.parametrize("ours,theirs,names", [("engine", "torch", ENGINE_NAMES),
                                               ("flowvision", "torchvision", FLOWVISION_NAMES)])
def test_first_names_scripts_reach_for(ours, theirs, names):
    assert set(_reachable(theirs, names)) == set(names), "the list names something torch does not have"
    missing = sorted(set(names) - set(_reachable(ours, names)))
    assert missing == [], f"not reachable after import {ours}: {missing}"


@pytest.mark.parametrize("ours,theirs,skip", [
    (engine, "torch", ("ops",)),  # engine.ops is our op library; torch.ops is a namespace of every name
    (flowvision, "torchvision", ())])
def test_every_module_torch_also_has_is_reachable(ours, theirs, skip):
    names = _our_modules(ours, skip)
    assert len(names) > 20
    theirs_modules = {name for name, is_module in _reachable(theirs, names).items() if is_module}
    missing = sorted(theirs_modules - set(_reachable(ours.__name__, sorted(theirs_modules))))
    assert missing == [], f"{theirs} has these after its import, {ours.__name__} does not: {missing}"
