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


def test_quantized_googlenet_weights_bring_transform_input_and_drop_the_aux_heads(tmp_path, fbgemm):
    """As torchvision's builder: the checkpoint's auxiliary heads load, then go unless ``aux_logits=True``."""
    torch.manual_seed(4)
    reference = tvq.googlenet(weights=None, quantize=True, aux_logits=True, transform_input=True,
                              init_weights=False).eval()
    image = np.random.default_rng(1).random((1, 3, 64, 72), dtype=np.float32)
    expected = reference(torch.from_numpy(image)).numpy()
    with serving_checkpoint(tmp_path, reference, "quantized_googlenet", "IMAGENET1K_FBGEMM_V1",
                            "quantized/googlenet_fbgemm-c81f6644.pth"):
        model = quantization.googlenet(weights="DEFAULT", quantize=True, progress=False).eval()
        assert model.transform_input and model.aux1 is None and model.aux2 is None and not model.aux_logits
        with engine.no_grad():
            np.testing.assert_array_equal(model(engine.from_numpy(image)).numpy(), expected)
        with pytest.warns(UserWarning, match="auxiliary heads of the pretrained googlenet are not trained"):
            kept = quantization.googlenet(weights="DEFAULT", quantize=True, aux_logits=True, progress=False)
        assert kept.aux1 is not None
