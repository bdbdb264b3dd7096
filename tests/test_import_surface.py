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


@pytest.mark.parametrize("ours,theirs,names,skip", [
    (engine, "torch", ENGINE_NAMES, ("ops",)),  # engine.ops is our op library; torch.ops is a namespace of every name
    (flowvision, "torchvision", FLOWVISION_NAMES, ())])
def test_names_and_modules_reachable_as_in_torch(ours, theirs, names, skip):
    """The names scripts reach for first, and every module of ours whose name torch (torchvision) reaches as a module
    after its import: one fresh interpreter for each side."""
    modules = _our_modules(ours, skip)
    assert len(modules) > 20
    found = _reachable(theirs, sorted(set(names) | set(modules)))
    assert set(names) <= set(found), "the list names something torch does not have"
    theirs_modules = {name for name in modules if found.get(name)}
    reached = set(_reachable(ours.__name__, sorted(set(names) | theirs_modules)))
    missing = sorted(set(names) - reached)
    assert missing == [], f"not reachable after import {ours.__name__}: {missing}"
    missing = sorted(theirs_modules - reached)
    assert missing == [], f"{theirs} has these after its import, {ours.__name__} does not: {missing}"
