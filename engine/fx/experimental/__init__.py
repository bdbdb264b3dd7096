"""``engine.fx.experimental``: torch.fx.experimental's graph optimizations (``optimization.fuse``)."""
