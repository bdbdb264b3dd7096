"""The GPU check: one command for a machine with an NVIDIA GPU, CuPy and PyTorch; about 5 minutes.

    python scripts/gpu_check.py [--out DIR] [--tests-only | --bench-only] [-k EXPR] [--every-model]
                                [--wheels DIR]
    python scripts/gpu_check.py --parity [--out DIR] [-k EXPR]
    python scripts/gpu_check.py --op-sweep [--out DIR] [-k EXPR]

Runs the ``cuda`` tests (every CUDA kernel against PyTorch, every zoo model against itself on the CPU,
training steps, the digits run) and the ``gpu`` bench suite (ours and PyTorch side by side), each in a
process of its own so that a failure in one still leaves the other's results; writes their logs to
``DIR`` (default: the current folder) and prints a summary: the machine, the test counts and failures,
and the bench table. Exit status 0 when every test passed and the bench ran. ``--wheels DIR`` first installs
mpi4py and MPICH from DIR without network where they are missing (``scripts/device_wheels.py`` fills it), so
that the NCCL tests and the NCCL bandwidth rows of the bench run.

``--parity`` runs, instead, the model parity tests (``tests/flowvision/models``) with our side of every
comparison on the GPU (``FLOWVISION_PARITY_DEVICE=cuda``): each family's small configurations, forward and
training step, against timm and torchvision on the CPU. On the 2-core development machine, on the CPU emulation
of CuPy, its two halves (alternate files) took 5 minutes each, run side by side; it has not yet run on a GPU.

``--op-sweep`` runs, instead, every test file that calls ``check_op`` with our side of each call on the GPU
(``OP_CHECK_DEVICE=cuda``, tests/op_device_sweep.py): each op's CUDA path against PyTorch on the CPU. The tests
whose values are random draws, which the GPU makes with its own generator, and those of factories given no
device are left out (``OP_SWEEP_LEFT_OUT``).
On the CPU emulation of CuPy it took 5 minutes on two processes; it has not yet run on a GPU.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
# the tests run in this one process, on the one GPU: setup.cfg's two workers (-n 2) cleared, so pytest-xdist, which
# the GPU machine may not have, is not needed
ONE_PROCESS = ["-o", "addopts="]
# Files of tests/flowvision/models that --parity leaves out: the cuda tests themselves, exports and int8 models (run
# on the CPU only), and checks of names, weights and initialisation (no outputs to compare).
PARITY_LEFT_OUT = ["test_cuda_models.py", "test_onnx_models.py", "test_openvino_models.py", "test_quantized_models.py",
                   "test_quantized_mobilenet_v3.py", "test_quantized_pretrained.py", "test_registry.py",
                   "test_detection_weights.py", "test_torch_init_parity.py"]
# Tests of --op-sweep that compare random draws (torch's CPU generator's numbers; the GPU draws its own), weights
# initialised at a lazy module's first call (drawn on the GPU there), or factories given no device (on the CPU,
# rightly).
OP_SWEEP_LEFT_OUT = ["test_gumbel_softmax_draws_torch_s_samples", "test_rsample_gradients_match_torch",
                     "test_native_dropout_matches_torch_draws_and_gradient", "test_dropouts_draw_torchs_masks",
                     "test_svd_lowrank_draws_torchs_numbers", "test_multivariate_normal_rsample_gradient_matches_torch",
                     "test_sweep_sample_scoring_moments_and_gradients", "test_first_call_infers_shapes_and_initialises",
                     "test_unbatched_inputs_infer_the_channel_dim", "test_triangle_indices", "test_window_arguments"]


def _machine():
    """One line about the GPU and the libraries, or why there is no GPU."""
    code = ("import cupy, numpy, torch; p = cupy.cuda.runtime.getDeviceProperties(0); "
            "print(p['name'].decode(), '|', 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), '| driver',"
            " cupy.cuda.runtime.driverGetVersion(), '| CuPy', cupy.__version__, '| torch', torch.__version__,"
            " '| numpy', numpy.__version__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return result.stdout.strip() or f"no GPU: {result.stderr.strip().splitlines()[-1:]}"


def _run(name, command, log):
    """Run ``command`` from the repository root, its output to ``log``; (return code, seconds)."""
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        code = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.perf_counter() - start
    print(f"{name}: exit {code} in {seconds:.0f} s (log: {log})", flush=True)
    return code, seconds


def _install_wheels(folder):
    """Install mpi4py and MPICH from the wheels in ``folder`` (offline) unless mpi4py imports already; a line."""
    if subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode == 0:
        return "mpi4py: already installed"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
                             str(folder), "mpi4py", "mpich"], capture_output=True, text=True)
    if result.returncode:
        return f"mpi4py: not installed from {folder}: {(result.stderr.strip().splitlines() or ['?'])[-1]}"
    return f"mpi4py: installed from {folder}"


def _test_summary(log):
    text = pathlib.Path(log).read_text(errors="replace")
    counts = re.findall(r"^=+ (.*) in [\d.]+s", text, re.M)
    failures = re.findall(r"^(FAILED|ERROR) (.*)$", text, re.M)
    lines = [f"tests: {counts[-1] if counts else 'no summary line (see the log)'}"]
    lines += [f"  {kind} {what}" for kind, what in failures[:40]]
    return "\n".join(lines)


def _bench_table(log):
    text = pathlib.Path(log).read_text(errors="replace")
    start = text.find("## gpu")
    notes = re.findall(r"^(?:NCCL all-reduce .*|.* rows failed: .*|.* skipped: .*)$", text, re.M)
    table = text[start:].strip() if start >= 0 else "bench: no table (see the log)\n" + text[-2000:]
    return "\n".join(notes + [table])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--tests-only", action="store_true")
    parser.add_argument("--bench-only", action="store_true")
    parser.add_argument("-k", help="run only the cuda tests matching this pytest expression")
    parser.add_argument("--every-model", action="store_true",
                        help="every classifier up to 300M parameters, not the smallest of each family, each also "
                             "in a captured nn.Graph")
    parser.add_argument("--wheels", help="a folder of mpi4py/mpich wheels to install offline where missing")
    parser.add_argument("--parity", action="store_true",
                        help="the model parity tests with our models on the GPU, instead of the cuda tests and bench")
    parser.add_argument("--op-sweep", action="store_true",
                        help="every check_op test with our side on the GPU, instead of the cuda tests and bench")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"gpu_check {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {_machine()}", flush=True)
    if args.wheels:
        print(_install_wheels(args.wheels), flush=True)
    status = 0
    if args.every_model:
        os.environ["CUDA_EVERY_MODEL"] = "1"
    if args.parity:
        os.environ["FLOWVISION_PARITY_DEVICE"] = "cuda"
        command = [sys.executable, "-m", "pytest", *ONE_PROCESS, "-q", "-rfE", "-p", "no:cacheprovider",
                   "--durations=15", "--timeout=300", "tests/flowvision/models"]
        command += [f"--ignore=tests/flowvision/models/{name}" for name in PARITY_LEFT_OUT]
        command += ["-k", args.k] if args.k else []
        code, _ = _run("parity tests on the GPU", command, out / "parity_tests.log")
        print(_test_summary(out / "parity_tests.log"), flush=True)
        return 1 if code else 0
    if args.op_sweep:
        os.environ["OP_CHECK_DEVICE"] = "cuda"
        files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                       if "check_op" in p.read_text(errors="replace"))
        chosen = " and ".join(f"not {name}" for name in OP_SWEEP_LEFT_OUT)
        command = [sys.executable, "-m", "pytest", *ONE_PROCESS, "-q", "-rfE", "-p", "no:cacheprovider",
                   "--durations=15", "--timeout=300", "-k", f"({args.k}) and {chosen}" if args.k else chosen, *files]
        code, _ = _run("check_op tests on the GPU", command, out / "op_sweep.log")
        print(_test_summary(out / "op_sweep.log"), flush=True)
        return 1 if code else 0
    if not args.bench_only:
        command = [sys.executable, "-m", "pytest", *ONE_PROCESS, "-m", "cuda", "-q", "-rfE", "-p", "no:cacheprovider",
                   "--durations=15", "--timeout=150", "--continue-on-collection-errors", "tests"]
        command += ["-k", args.k] if args.k else []
        code, _ = _run("cuda tests", command, out / "cuda_tests.log")
        status |= code
        print(_test_summary(out / "cuda_tests.log"), flush=True)
    if not args.tests_only:
        command = [sys.executable, "scripts/bench.py", "--suite", "gpu", "--repeat", "10"]
        code, _ = _run("gpu bench", command, out / "gpu_bench.log")
        status |= code
        print(_bench_table(out / "gpu_bench.log"), flush=True)
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
