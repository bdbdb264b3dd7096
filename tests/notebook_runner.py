"""Execute a notebook with nbclient on a kernel that runs this interpreter; collect what it printed."""
import json
import sys

import nbclient
import nbformat
from ipykernel import kernelspec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def kernel_manager(tmp_path):
    """A kernel manager whose only ``python3`` kernel runs this interpreter (not whatever ``python`` is on PATH)."""
    kernels = tmp_path / "kernels"
    kernelspec.write_kernel_spec(str(kernels / "python3"))
    spec = json.loads((kernels / "python3" / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    return KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))


def execute(path, workdir, tmp_path):
    """Run the notebook at ``path`` in ``workdir``: (executed notebook, all its stream output as one string).

    A cell that raised fails the calling test.
    """
    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(nb, km=kernel_manager(tmp_path), timeout=300,
                                     resources={"metadata": {"path": str(workdir)}})
    client.execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    return nb, "".join(out.text for out in outputs if out.output_type == "stream")
