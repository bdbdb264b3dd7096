"""The index of the timm families: which module of ``flowvision/models/timm_families`` registers which models.

    python scripts/timm_index.py            # write flowvision/models/timm_families/_index.py
    python scripts/timm_index.py --check    # exit 1 when it is not current

``flowvision.models`` lists and matches those models from the index and imports a family's module the first time
one of its models is built (``registry.register_lazy``). Run this after adding or renaming a model there.
"""
import argparse
import importlib
import os
import pkgutil
import pprint
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "flowvision", "models", "timm_families", "_index.py")
HEADER = '''"""Which module of this package registers which models: written by ``python scripts/timm_index.py``, not by hand.

``registry.register_lazy`` lists these models at start-up and imports their module when one of them is first built.
"""
'''


def current_index():
    """{module: (names it registers, in registration order)}, from importing every family module."""
    from flowvision.models import registry, timm_families

    modules = [info.name for info in pkgutil.iter_modules(timm_families.__path__) if not info.name.startswith("_")]
    index = {}
    for module in sorted(modules):
        dotted = f"{timm_families.__name__}.{module}"
        importlib.import_module(dotted)
        names = [name for name, fn in registry._model_entrypoints.items() if fn.__module__ == dotted]
        if names:
            index[module] = tuple(names)
    return index


def render(index):
    """The text of ``_index.py`` for ``index``."""
    return HEADER + "MODULES = " + pprint.pformat(index, width=120, compact=True) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the index is not current")
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    text = render(current_index())
    with open(PATH, encoding="utf-8") as f:
        current = f.read() == text
    if args.check:
        print("the index is current" if current else f"{PATH} is not current: run python scripts/timm_index.py")
        return 0 if current else 1
    if not current:
        with open(PATH, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {PATH}: {len(text.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
