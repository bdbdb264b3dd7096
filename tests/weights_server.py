"""Point flowvision's published weights at a local test server, with an empty cache."""
import contextlib
import hashlib
import json

import pytest
import torch
from http_server import FileServer

from flowvision import hub
from flowvision.models import weights as W


def serve_weights(patch, server, tmp, model, tag, file_name, data, **fields):
    """Publish ``data`` on ``server`` as (``model``, ``tag``)'s file, its full sha256 (and ``fields``) in a
    manifest overlay under ``tmp``; downloads go to an empty cache in ``tmp/home``, network allowed."""
    server.files[file_name] = data
    record = {"sha256": hashlib.sha256(data).hexdigest(), "sha256_is_prefix": False, **fields}
    overlay = tmp / "overlay.json"
    overlay.write_text(json.dumps({model: {tag: record}}))
    patch.setenv(W.ENV_URL_BASE, server.base_url)
    patch.setenv(W.ENV_MANIFEST, str(overlay))
    patch.setenv(hub.ENV_HOME, str(tmp / "home"))
    patch.delenv(hub.ENV_OFFLINE, raising=False)
    hub.set_dir(None)


@contextlib.contextmanager
def serving_checkpoint(tmp, reference, model, tag, file_name):
    """For a module's tests: ``reference`` (a torch module) saved under ``tmp`` as a PyTorch checkpoint and
    published by a local server as (``model``, ``tag``)'s file, with an empty cache and ``tmp`` as the
    working directory. Yields (server, checkpoint path); everything is put back on exit."""
    checkpoint = tmp / f"{model}.pth"
    torch.save(reference.state_dict(), checkpoint)
    patch = pytest.MonkeyPatch()
    try:
        with FileServer() as server:
            serve_weights(patch, server, tmp, model, tag, file_name, checkpoint.read_bytes())
            patch.chdir(tmp)
            yield server, checkpoint
    finally:
        patch.undo()
