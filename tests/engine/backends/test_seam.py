"""The seam between the engine and its devices: one table of kernel families that both backends fill
with the same names and signatures, clear errors for what a device lacks, and nothing outside
``engine/backends`` reaching into a backend's modules."""
import ast
import inspect
import pathlib
import types

import pytest

import engine
from engine import backends

ROOT = pathlib.Path(engine.__file__).parent.parent
CUDA = ROOT / "engine" / "backends" / "cuda"


def _cuda_signatures(family):
    """{name: (parameters, defaults)} of the CUDA module's top-level functions, read from its source (no
    CuPy needed)."""
    tree = ast.parse((CUDA / f"{family}.py").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args] + [a.arg for a in args.kwonlyargs]
            defaults = [ast.literal_eval(d) for d in args.defaults + [d for d in args.kw_defaults if d is not None]]
            out[node.name] = (names, defaults)
    return out


@pytest.mark.parametrize("family", sorted(backends.KERNELS))
def test_cpu_and_cuda_kernels_share_names_and_signatures(family):
    cpu = backends.cpu.families()[family]
    cuda = _cuda_signatures(family)
    for name in backends.KERNELS[family]:
        assert name in cuda, f"no CUDA kernel {family}.{name}"
        params = inspect.signature(getattr(cpu, name)).parameters.values()
        names = [p.name for p in params]
        defaults = [p.default for p in params if p.default is not inspect.Parameter.empty]
        assert (names, defaults) == cuda[name], f"{family}.{name}: CPU {names} {defaults} vs CUDA {cuda[name]}"


def test_every_family_module_is_listed_by_both_devices():
    sources = {p.stem for p in CUDA.glob("*.py")} - {"__init__", "runtime", "source", "tf32", "cublas", "graphs",
                                                    "arena", "autocast", "philox", "sdp_switches"}
    assert sources == set(backends.KERNELS)
    assert set(backends.cpu.families()) == set(backends.KERNELS) | set(backends.CPU_ONLY)


def test_cpu_only_families_are_whole_and_refused_elsewhere():
    import cuda_emulator

    for family, names in backends.CPU_ONLY.items():
        kernels = backends.kernels(engine.zeros(1)._data, family)
        assert all(callable(getattr(kernels, name)) for name in names)
        with cuda_emulator.installed(), pytest.raises(NotImplementedError, match=f"^the {family} kernels run on"):
            backends.kernels(engine.zeros(1, device="cuda")._data, family)


def test_a_missing_kernel_names_the_device_and_kernel():
    kernels = backends.KernelSet("cuda", "pool", types.SimpleNamespace())
    with pytest.raises(NotImplementedError, match="^no CUDA kernel for max_pool2d_forward$"):
        kernels.max_pool2d_forward
    with pytest.raises(NotImplementedError, match="not a kernel of the 'pool' family"):
        kernels.conv2d_forward
    with pytest.raises(KeyError, match="unknown kernel family 'poool'"):
        backends.kernels(engine.zeros(1)._data, "poool")


def test_runtimes_have_the_same_hooks():
    names = ("prepare_backward", "release_scratch", "stream_count", "run_streams", "capturing", "captures_graphs",
             "capture", "autocast", "gemm_settings")
    for name in names:
        assert callable(getattr(backends.runtime("cpu"), name)) and callable(getattr(backends.runtime("cuda"), name))
    assert backends.runtime("cuda").stream_count(8) == 1 and backends.runtime("cuda").run_streams([]) is None
    assert backends.runtime("cuda").captures_graphs() and not backends.runtime("cpu").captures_graphs()
    assert backends.runtime("cpu").autocast() is None and backends.runtime("cpu").gemm_settings() == ()
    assert backends.runtime("cuda").gemm_settings() == (False, False, False)
    assert backends.runtime(engine.zeros(1)._data) is backends.runtime("cpu")


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = ("." * node.level) + (node.module or "")
            yield module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def test_nothing_outside_the_backends_imports_a_backend_module():
    """Ops, autograd, nn.Graph and flowvision reach devices through backends.kernels and backends.runtime
    only (a module name with ``backends.cpu`` or ``backends.cuda`` in it, or ``from ..backends import cpu``)."""
    offenders = []
    for top in ("engine", "flowvision", "scripts"):
        for path in (ROOT / top).rglob("*.py"):
            if (ROOT / "engine" / "backends") in path.parents:
                continue
            for module, names in _imports(path):
                if "backends.cpu" in module or "backends.cuda" in module or (
                        module.endswith("backends") and {"cpu", "cuda"} & set(names)):
                    offenders.append(f"{path.relative_to(ROOT)}: {module} {names}")
    assert not offenders, "\n".join(offenders)


def test_cuda_without_a_gpu_says_what_is_missing(monkeypatch):
    from engine import _device
    monkeypatch.setattr(_device, "_cupy", None)
    monkeypatch.setattr(_device, "_cupy_missing", True)
    assert not engine.cuda.is_available() and engine.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match=r"^CUDA is not available: CuPy is not installed; pip install "
                                           r"'flowvision\[gpu\]'"):
        engine.ones(2).cuda()
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        engine.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        engine.cuda.current_device()
