"""``engine.utils.model_zoo.load_url`` (torch.utils.model_zoo's name for the hub's checkpoint download), from a
server on 127.0.0.1 into the directory given."""
import io

import numpy as np
import torch
from http_server import FileServer

import engine
import engine.utils.model_zoo as model_zoo


def test_load_url_downloads_a_torch_checkpoint(tmp_path):
    state = {"fc.weight": torch.randn(3, 4, generator=torch.Generator().manual_seed(0))}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    with FileServer() as server:
        server.files["zoo.pth"] = buffer.getvalue()
        loaded = model_zoo.load_url(server.url("zoo.pth"), model_dir=str(tmp_path), progress=False)
    assert isinstance(loaded["fc.weight"], engine.Tensor)
    np.testing.assert_array_equal(loaded["fc.weight"].numpy(), state["fc.weight"].numpy())
    assert (tmp_path / "zoo.pth").read_bytes() == buffer.getvalue()
