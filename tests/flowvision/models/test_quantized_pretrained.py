"""Published quantized weights: downloaded from a local server, checked, loaded, and giving torchvision's logits
bit for bit; a second load comes from the cache. The reference is torchvision's quantized ResNet-18, seeded."""
import numpy as np
import pytest
import torch
import torchvision.models.quantization as tvq
from weights_server import serving_checkpoint

import engine
from flowvision.models import quantization

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.fixture
def fbgemm():
    before = torch.backends.quantized.engine, engine.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    yield
    torch.backends.quantized.engine, engine.backends.quantized.engine = before


def test_quantized_weights_from_a_local_server(tmp_path, fbgemm):
    torch.manual_seed(3)
    reference = tvq.resnet18(weights=None, quantize=True).eval()
    image = np.random.default_rng(0).random((2, 3, 45, 61), dtype=np.float32)
    expected = reference(torch.from_numpy(image)).numpy()
    with serving_checkpoint(tmp_path, reference, "quantized_resnet18", "IMAGENET1K_FBGEMM_V1",
                            "quantized/resnet18_fbgemm_16fa66dd.pth") as (server, _):
        for kwargs in ({"pretrained": True, "quantize": True}, {"weights": "DEFAULT", "quantize": True}):
            model = quantization.resnet18(progress=False, **kwargs).eval()
            assert engine.backends.quantized.engine == "fbgemm"  # the weights' backend
            with engine.no_grad():
                np.testing.assert_array_equal(model(engine.from_numpy(image)).numpy(), expected)
        assert len(server.requests) == 1
        with pytest.raises(ValueError, match="do not belong to resnet18"):
            quantization.resnet18(weights=quantization.ResNet18_QuantizedWeights.DEFAULT, quantize=False)
