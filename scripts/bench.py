"""Ours and PyTorch side by side, in one process, same threads and inputs; prints medians and ratios.

    python scripts/bench.py [--suite ops] [--threads 2] [--repeat 5] [--batch 8]

A ratio is ours / PyTorch in time (lower is better; 1.5 means we take 1.5x as long).
The machine is noisy: compare ratios from one run, not absolute times across runs.
"""
import argparse
import statistics
import time

import numpy as np


def median_time(fn, repeat):
    """Median wall time of ``fn()`` over ``repeat`` runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def forward_backward(lib, fn, arrays):
    """A closure running ``fn`` on fresh leaf tensors of ``lib`` and back-propagating ones."""
    def run():
        tensors = [lib.from_numpy(a).requires_grad_(a.dtype.kind == "f") for a in arrays]
        out = fn(*tensors)
        out.backward(lib.ones_like(out))
    return run


# ResNet-50 layer shapes at 224x224: (name, in_channels, out_channels, kernel, stride, size)
RESNET50_CONVS = [
    ("stem 7x7/2", 3, 64, 7, 2, 224),
    ("l1 1x1 64->64", 64, 64, 1, 1, 56),
    ("l1 3x3 64", 64, 64, 3, 1, 56),
    ("l1 1x1 64->256", 64, 256, 1, 1, 56),
    ("l1 1x1 256->64", 256, 64, 1, 1, 56),
    ("l2 3x3/2 128", 128, 128, 3, 2, 56),
    ("l2 1x1/2 256->512", 256, 512, 1, 2, 56),
    ("l2 3x3 128", 128, 128, 3, 1, 28),
    ("l2 1x1 512->128", 512, 128, 1, 1, 28),
    ("l3 3x3/2 256", 256, 256, 3, 2, 28),
    ("l3 3x3 256", 256, 256, 3, 1, 14),
    ("l3 1x1 1024->256", 1024, 256, 1, 1, 14),
    ("l4 3x3/2 512", 512, 512, 3, 2, 14),
    ("l4 3x3 512", 512, 512, 3, 1, 7),
    ("l4 1x1 2048->512", 2048, 512, 1, 1, 7),
]
RESNET50_BN = [("bn 64x112", 64, 112), ("bn 256x56", 256, 56), ("bn 512x28", 512, 28),
               ("bn 1024x14", 1024, 14), ("bn 2048x7", 2048, 7)]


def suite_ops(args, torch, engine):
    """conv2d, linear and batch_norm forward+backward on ResNet-50 shapes."""
    rng = np.random.default_rng(0)
    rows = []
    for name, cin, cout, k, stride, size in RESNET50_CONVS:
        x = rng.standard_normal((args.batch, cin, size, size), dtype=np.float32)
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.05
        pad = k // 2
        for lib_name, lib in (("torch", torch), ("ours", engine)):
            conv = lib.nn.functional.conv2d
            rows.append((f"conv2d {name}", lib_name, median_time(
                forward_backward(lib, lambda a, b, c=conv: c(a, b, None, stride, pad), [x, w]), args.repeat)))
    x = rng.standard_normal((args.batch, 2048), dtype=np.float32)
    w = rng.standard_normal((1000, 2048), dtype=np.float32) * 0.02
    b = np.zeros(1000, np.float32)
    for lib_name, lib in (("torch", torch), ("ours", engine)):
        rows.append(("linear 2048->1000", lib_name, median_time(
            forward_backward(lib, lib.nn.functional.linear, [x, w, b]), args.repeat)))
    for name, c, size in RESNET50_BN:
        x = rng.standard_normal((args.batch, c, size, size), dtype=np.float32)
        gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
        for lib_name, lib in (("torch", torch), ("ours", engine)):
            def bn(a, g, bb, lib=lib, c=c):
                mean, var = lib.zeros(c), lib.ones(c)
                return lib.nn.functional.batch_norm(a, mean, var, g, bb, training=True)
            rows.append((f"batch_norm {name}", lib_name, median_time(
                forward_backward(lib, bn, [x, gamma, beta]), args.repeat)))
    return rows


SUITES = {"ops": suite_ops}


def print_ratios(title, rows):
    """Rows of (case, 'torch'|'ours', seconds) printed as one line per case with the ratio."""
    cases = {}
    for case, who, seconds in rows:
        cases.setdefault(case, {})[who] = seconds
    print(f"\n## {title}\n")
    print(f"| case | PyTorch ms | ours ms | ours/PyTorch |")
    print("| --- | ---: | ---: | ---: |")
    ratios = []
    for case, t in cases.items():
        ratio = t["ours"] / t["torch"]
        ratios.append(ratio)
        print(f"| {case} | {t['torch'] * 1e3:.2f} | {t['ours'] * 1e3:.2f} | {ratio:.2f} |")
    print(f"\nworst ratio {max(ratios):.2f}, median ratio {statistics.median(ratios):.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES) + ["all"], default="all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()

    import torch
    import engine
    torch.set_num_threads(args.threads)
    engine.set_num_threads(args.threads)
    print(f"threads: {args.threads} (torch {torch.__version__}, numpy {np.__version__}), batch {args.batch}, "
          f"median of {args.repeat}")
    for name in sorted(SUITES) if args.suite == "all" else [args.suite]:
        print_ratios(name, SUITES[name](args, torch, engine))


if __name__ == "__main__":
    main()
