"""The memory plans of zoo models' CUDA graphs: how many buffers each capture took, how many the plan could not
place, the arena's size against the peak of the bytes the run had alive at once (the least any allocator
needs) and against the sum of all its buffers (no reuse at all).

    python scripts/memory_plan.py [--train] [--batch N] [--size S] [--emulate] [MODEL ...]

On a GPU; ``--emulate`` runs it on the CPU emulation of CuPy (``tests/cuda_emulator.py``), whose allocations
are the GPU's, only slower. ``--train``: a training step (cross-entropy, AdamW) instead of inference.
"""
import argparse
import contextlib
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _graph(engine, model, train):
    class Step(engine.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            if train:
                self.add_optimizer(engine.optim.AdamW(model.parameters(), lr=1e-3))

        def build(self, x, y):
            out = self.model(x)
            if not train:
                return out
            loss = engine.nn.functional.cross_entropy(out, y)
            loss.backward()
            return loss
    return Step()


def report(name, args):
    import engine
    import flowvision.models as models
    model = models.create_model(name, num_classes=10).cuda()
    model.train(args.train)
    graph = _graph(engine, model, args.train)
    x = engine.randn(args.batch, 3, args.size, args.size, device="cuda")
    y = engine.zeros(args.batch, dtype=engine.int64, device="cuda")
    start = time.perf_counter()
    for _ in range(3 if args.train else 1):  # a training graph is captured on its second call
        graph(x, y)
    captured = next(iter(graph._steps.values())).replay if args.train else graph._last_plan.captured.graph
    arena = captured.arena
    mib = 2 ** 20
    print(f"{name:28s} {arena.count:6d} {arena.misses:6d} {arena.arena_bytes / mib:10.2f} "
          f"{arena.lifetimes.peak() / mib:10.2f} {sum(arena.sizes) / mib:10.2f} "
          f"{time.perf_counter() - start:7.1f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["resnet18", "resnet50", "mobilenet_v3_large",
                                                       "efficientnet_b0", "convnext_tiny", "densenet121"])
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--emulate", action="store_true")
    args = parser.parse_args()
    emulation = contextlib.nullcontext()
    if args.emulate:
        sys.path[:0] = [str(ROOT)]  # the checkout's engine before tests/engine, a folder of tests
        sys.path.append(str(ROOT / "tests"))
        import cuda_emulator
        emulation = cuda_emulator.installed()
    print(f"{'model':28s} {'buffers':>6s} {'missed':>6s} {'arena MiB':>10s} {'peak MiB':>10s} {'all MiB':>10s} "
          f"{'time s':>7s}")
    with emulation:
        for name in args.models:
            report(name, args)


if __name__ == "__main__":
    main()
