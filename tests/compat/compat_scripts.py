"""Running a PyTorch script both ways: as written, and with its imports pointed at engine and flowvision."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rewrite_imports(source):
    """``source`` with torch imports pointed at engine and torchvision's at flowvision; other lines unchanged."""
    lines = []
    for line in source.splitlines():
        if line == "import torch":
            line = "import engine as torch"
        elif re.match(r"(import|from) torch", line):
            line = re.sub(r"\btorchvision\b", "flowvision", line)
            line = re.sub(r"\btorch(?=[.\s])", "engine", line, count=1)
        lines.append(line)
    return "\n".join(lines) + "\n"


def run_script(script, workdir, *args):
    """Run ``script`` in ``workdir`` with this checkout importable; the lines it printed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, script, *args], cwd=workdir, env=env, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()
