"""flowvision.models: the model registry and the model families.

``flowvision.models.resnet50()`` builds a model directly; ``create_model('resnet50', ...)`` and
``ModelCreator.create_model`` build one by name; ``list_models('resnet*')`` lists them. The timm families'
entrypoints (``flowvision.models.deit_small_patch16_224``) are reached here too, their module imported on first use.
"""
from ._features import FeatureInfo, FeatureListNet, create_feature_extractor, get_module_names
from ._helpers import adapt_input_conv, load_checkpoint, load_state_dict
from .registry import (ModelCreator, create_model, get_model, get_model_builder, is_model, is_model_pretrained,
                       list_models, list_modules, model_alias_of, model_entrypoint, register_model)
from .resnet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from . import mobilenet  # noqa: F401  (torchvision's module path for both)
from .vgg import *  # noqa: F401,F403
from .alexnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .googlenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .shufflenetv2 import *  # noqa: F401,F403
from .mnasnet import *  # noqa: F401,F403
from .efficientnet import *  # noqa: F401,F403
from .regnet import *  # noqa: F401,F403
from .convnext import *  # noqa: F401,F403
from .vision_transformer import *  # noqa: F401,F403
from .swin_transformer import *  # noqa: F401,F403
from .maxvit import *  # noqa: F401,F403
from .weights import (ENV_HF_ENDPOINT, ENV_MANIFEST, ENV_URL_BASE, GITHUB_URL_BASE, HF_URL_BASE, URL_BASE,  # noqa: F401
                      ImageClassification, ObjectDetection, OpticalFlow, SemanticSegmentation, VideoClassification,
                      Weights, WeightsEnum, get_model_weights, get_weight, list_pretrained, load_pretrained,
                      pretrained_tag, resolve_weights)
from . import (alexnet, convnext, densenet, detection, efficientnet, googlenet, inception, maxvit,  # noqa: F401
               mnasnet, mobilenetv2, mobilenetv3, optical_flow, quantization, regnet, resnet, segmentation,
               shufflenetv2, squeezenet, swin_transformer, timm_families, vgg, video, vision_transformer, weights)
from .registry import document_entrypoints as _document_entrypoints

_document_entrypoints(lambda name: get_model_weights(name) if name in list_pretrained() else None)

# names made on first use: the timm families' entrypoints and the weights enums
_LAZY = timm_families.__all__ + [name for name in weights.__all__ if name not in globals()]
__all__ = [name for name in globals() if not name.startswith("_")] + _LAZY


def __getattr__(name):
    """A timm family's entrypoint, its module imported on first use (see ``timm_families``), or a weights enum."""
    if name in timm_families._MODULE_OF:
        return getattr(timm_families, name)
    if name in weights._enum_models():
        return getattr(weights, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
