"""The module the fx pass and rewrite tests trace, written once for torch and engine (``net(torch)``,
``net(engine)``): leaf modules in a Sequential, a buffer, methods, operators and a shape output."""


def net(lib):
    """Leaf modules, a buffer, methods and operators: enough node kinds for every pass and rewrite tested."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
            self.fc = nn.Linear(4, 5)
            self.register_buffer("off", lib.arange(5, dtype=lib.float32))

        def forward(self, x):
            y = self.seq(x).relu()
            y = y.permute(0, 2, 3, 1).mean((1, 2))
            return self.fc(y) + self.off, y.shape
    return Net()
