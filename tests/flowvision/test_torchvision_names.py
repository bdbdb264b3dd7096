"""torchvision's smaller names, each where torchvision has it: the image backend switches, ``version``,
``models.get_model_builder``, the detection weights enums and torchvision's module paths."""
import pytest
import torchvision

import flowvision
import flowvision.models as models


def test_image_backend_is_pillow():
    assert flowvision.get_image_backend() == torchvision.get_image_backend() == "PIL"
    flowvision.set_image_backend("PIL")
    with pytest.raises(ValueError, match="Invalid backend 'cv2'. Options are 'PIL' and 'accimage'"):
        flowvision.set_image_backend("cv2")
    with pytest.raises(ValueError, match="'accimage' backend is not supported"):
        flowvision.set_image_backend("accimage")
    assert flowvision.get_image_backend() == "PIL"
    assert flowvision.disable_beta_transforms_warning() is None


def test_version():
    assert flowvision.version.__version__ == flowvision.__version__


def test_get_model_builder():
    assert models.get_model_builder("resnet18") is models.resnet18
    with pytest.raises(ValueError, match="Unknown model 'resnet1'. Did you mean: .*resnet18"):
        models.get_model_builder("resnet1")


@pytest.mark.parametrize("module", ["models.detection", "models.mobilenet", "models.video.resnet",
                                    "models.video.swin_transformer", "models.quantization.mobilenet"])
def test_torchvision_module_paths_have_their_public_classes_builders_and_weights(module):
    theirs, ours = torchvision, flowvision
    for part in module.split("."):
        theirs, ours = getattr(theirs, part), getattr(ours, part)
    wanted = [n for n in dir(theirs) if n.endswith("_Weights") or n.endswith("_QuantizedWeights")]
    wanted += list(getattr(theirs, "__all__", ()))
    assert [n for n in wanted if not hasattr(ours, n)] == []
