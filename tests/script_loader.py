"""``load_script(name)``: one of the repository's ``scripts/<name>.py`` imported as a module, for tests that check
what a script writes or reuse what it defines (scripts are not a package)."""
import importlib.util
import os

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")


def load_script(name):
    """``scripts/<name>.py`` as a fresh module (its top level run once more)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(SCRIPTS, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
