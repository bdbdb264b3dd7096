"""Families and variants from timm (Wightman, "PyTorch Image Models") that torchvision lacks, with timm's names,
``state_dict`` keys and published weights.

Each module here registers under timm's module name (``deit``, ``mlp_mixer``...), so a family that
torchvision also has (``resnet``, ``vision_transformer``) lists its timm variants beside torchvision's.
"""
from . import (beit, byoanet, byobnet, cait, convmixer, convnext, crossvit, cspnet, deit, dla, dpn, efficientnet, eva,
               ghostnet, hrnet, inception_resnet_v2, inception_v4, levit, maxxvit, metaformer, mlp_mixer, mobilenetv3,
               mobilevit, nfnet, pit, regnet, res2net, resnest, resnet, resnetv2, rexnet, sknet, swin_transformer,
               swin_transformer_v2, swin_transformer_v2_cr, vision_transformer, vision_transformer_relpos, volo,
               xception_aligned, xcit)

# the entrypoints alone (each module's ``__all__`` lists only what it registered), gathered before the star imports
# below bind ``inception_v4`` and ``inception_resnet_v2`` to the entrypoints of those names; the classes keep their
# module's name, apart from torchvision's ``ResNet`` and ``VisionTransformer`` in ``flowvision.models``
__all__ = (beit.__all__ + byoanet.__all__ + byobnet.__all__ + cait.__all__ + convmixer.__all__ + convnext.__all__ +
           crossvit.__all__ + cspnet.__all__ + deit.__all__ + dla.__all__ + dpn.__all__ + efficientnet.__all__ +
           eva.__all__ + ghostnet.__all__ + hrnet.__all__ + inception_resnet_v2.__all__ + inception_v4.__all__ +
           levit.__all__ + maxxvit.__all__ + metaformer.__all__ + mlp_mixer.__all__ + mobilenetv3.__all__ +
           mobilevit.__all__ + nfnet.__all__ + pit.__all__ + regnet.__all__ + res2net.__all__ + resnest.__all__ +
           resnet.__all__ + resnetv2.__all__ + rexnet.__all__ + sknet.__all__ + swin_transformer.__all__ +
           swin_transformer_v2.__all__ + swin_transformer_v2_cr.__all__ + vision_transformer.__all__ +
           vision_transformer_relpos.__all__ + volo.__all__ + xception_aligned.__all__ + xcit.__all__)

from .beit import *  # noqa: E402,F401,F403
from .byoanet import *  # noqa: E402,F401,F403
from .byobnet import *  # noqa: E402,F401,F403
from .cait import *  # noqa: E402,F401,F403
from .convmixer import *  # noqa: E402,F401,F403
from .convnext import *  # noqa: E402,F401,F403
from .crossvit import *  # noqa: E402,F401,F403
from .cspnet import *  # noqa: E402,F401,F403
from .deit import *  # noqa: E402,F401,F403
from .dla import *  # noqa: E402,F401,F403
from .dpn import *  # noqa: E402,F401,F403
from .efficientnet import *  # noqa: E402,F401,F403
from .eva import *  # noqa: E402,F401,F403
from .ghostnet import *  # noqa: E402,F401,F403
from .hrnet import *  # noqa: E402,F401,F403
from .inception_resnet_v2 import *  # noqa: E402,F401,F403
from .inception_v4 import *  # noqa: E402,F401,F403
from .levit import *  # noqa: E402,F401,F403
from .maxxvit import *  # noqa: E402,F401,F403
from .metaformer import *  # noqa: E402,F401,F403
from .mlp_mixer import *  # noqa: E402,F401,F403
from .mobilenetv3 import *  # noqa: E402,F401,F403
from .mobilevit import *  # noqa: E402,F401,F403
from .nfnet import *  # noqa: E402,F401,F403
from .pit import *  # noqa: E402,F401,F403
from .regnet import *  # noqa: E402,F401,F403
from .res2net import *  # noqa: E402,F401,F403
from .resnest import *  # noqa: E402,F401,F403
from .resnet import *  # noqa: E402,F401,F403
from .resnetv2 import *  # noqa: E402,F401,F403
from .rexnet import *  # noqa: E402,F401,F403
from .sknet import *  # noqa: E402,F401,F403
from .swin_transformer import *  # noqa: E402,F401,F403
from .swin_transformer_v2 import *  # noqa: E402,F401,F403
from .swin_transformer_v2_cr import *  # noqa: E402,F401,F403
from .vision_transformer import *  # noqa: E402,F401,F403
from .vision_transformer_relpos import *  # noqa: E402,F401,F403
from .volo import *  # noqa: E402,F401,F403
from .xception_aligned import *  # noqa: E402,F401,F403
from .xcit import *  # noqa: E402,F401,F403
