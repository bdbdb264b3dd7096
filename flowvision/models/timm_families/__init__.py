"""Families and variants from timm (Wightman, "PyTorch Image Models") that torchvision lacks, with timm's names,
``state_dict`` keys and published weights.

Each module here registers under timm's module name (``deit``, ``mlp_mixer``...), so a family that
torchvision also has (``resnet``, ``vision_transformer``) lists its timm variants beside torchvision's.
"""
from . import (beit, byoanet, byobnet, cait, coat, convit, convmixer, convnext, crossvit, cspnet, davit, deit, dla, dpn,
               edgenext, efficientformer, efficientformer_v2, efficientnet, efficientvit_mit, efficientvit_msra, eva,
               fastvit, focalnet, gcvit, ghostnet, hardcorenas, hgnet, hiera, hrnet, inception_next,
               inception_resnet_v2, inception_v4, levit, mambaout, maxxvit, metaformer, mlp_mixer, mobilenetv3,
               mobilevit, nasnet, nest, nextvit, nfnet, pit, pnasnet, pvt_v2, rdnet, regnet, repghost, repvit, res2net,
               resnest, resnet, resnetv2, rexnet, selecsls, senet, sknet, starnet, swin_transformer,
               swin_transformer_v2, swin_transformer_v2_cr, tiny_vit, tnt, tresnet, twins, visformer,
               vision_transformer, vision_transformer_hybrid, vision_transformer_relpos, volo, vovnet, xception,
               xception_aligned, xcit)

# the entrypoints alone (each module's ``__all__`` lists only what it registered), gathered before the star imports
# below bind ``inception_v4`` and ``inception_resnet_v2`` to the entrypoints of those names; the classes keep their
# module's name, apart from torchvision's ``ResNet`` and ``VisionTransformer`` in ``flowvision.models``
__all__ = (beit.__all__ + byoanet.__all__ + byobnet.__all__ + cait.__all__ + coat.__all__ + convit.__all__ +
           convmixer.__all__ + convnext.__all__ + crossvit.__all__ + cspnet.__all__ + davit.__all__ + deit.__all__ +
           dla.__all__ + dpn.__all__ + edgenext.__all__ + efficientformer.__all__ + efficientformer_v2.__all__ +
           efficientnet.__all__ + efficientvit_mit.__all__ + efficientvit_msra.__all__ + eva.__all__ + fastvit.__all__ +
           focalnet.__all__ + gcvit.__all__ + ghostnet.__all__ + hardcorenas.__all__ + hgnet.__all__ + hiera.__all__ +
           hrnet.__all__ + inception_next.__all__ + inception_resnet_v2.__all__ + inception_v4.__all__ + levit.__all__ +
           mambaout.__all__ + maxxvit.__all__ + metaformer.__all__ + mlp_mixer.__all__ + mobilenetv3.__all__ +
           mobilevit.__all__ + nasnet.__all__ + nest.__all__ + nextvit.__all__ + nfnet.__all__ + pit.__all__ +
           pnasnet.__all__ + pvt_v2.__all__ + rdnet.__all__ + regnet.__all__ + repghost.__all__ + repvit.__all__ +
           res2net.__all__ + resnest.__all__ + resnet.__all__ + resnetv2.__all__ + rexnet.__all__ + selecsls.__all__ +
           senet.__all__ + sknet.__all__ + starnet.__all__ + swin_transformer.__all__ + swin_transformer_v2.__all__ +
           swin_transformer_v2_cr.__all__ + tiny_vit.__all__ + tnt.__all__ + tresnet.__all__ + twins.__all__ +
           visformer.__all__ + vision_transformer.__all__ + vision_transformer_hybrid.__all__ +
           vision_transformer_relpos.__all__ + volo.__all__ + vovnet.__all__ + xception.__all__ +
           xception_aligned.__all__ + xcit.__all__)

from .beit import *  # noqa: E402,F401,F403
from .byoanet import *  # noqa: E402,F401,F403
from .byobnet import *  # noqa: E402,F401,F403
from .cait import *  # noqa: E402,F401,F403
from .coat import *  # noqa: E402,F401,F403
from .convit import *  # noqa: E402,F401,F403
from .convmixer import *  # noqa: E402,F401,F403
from .convnext import *  # noqa: E402,F401,F403
from .crossvit import *  # noqa: E402,F401,F403
from .cspnet import *  # noqa: E402,F401,F403
from .davit import *  # noqa: E402,F401,F403
from .deit import *  # noqa: E402,F401,F403
from .dla import *  # noqa: E402,F401,F403
from .dpn import *  # noqa: E402,F401,F403
from .edgenext import *  # noqa: E402,F401,F403
from .efficientformer import *  # noqa: E402,F401,F403
from .efficientformer_v2 import *  # noqa: E402,F401,F403
from .efficientnet import *  # noqa: E402,F401,F403
from .efficientvit_mit import *  # noqa: E402,F401,F403
from .efficientvit_msra import *  # noqa: E402,F401,F403
from .eva import *  # noqa: E402,F401,F403
from .fastvit import *  # noqa: E402,F401,F403
from .focalnet import *  # noqa: E402,F401,F403
from .gcvit import *  # noqa: E402,F401,F403
from .ghostnet import *  # noqa: E402,F401,F403
from .hardcorenas import *  # noqa: E402,F401,F403
from .hgnet import *  # noqa: E402,F401,F403
from .hiera import *  # noqa: E402,F401,F403
from .hrnet import *  # noqa: E402,F401,F403
from .inception_next import *  # noqa: E402,F401,F403
from .inception_resnet_v2 import *  # noqa: E402,F401,F403
from .inception_v4 import *  # noqa: E402,F401,F403
from .levit import *  # noqa: E402,F401,F403
from .mambaout import *  # noqa: E402,F401,F403
from .maxxvit import *  # noqa: E402,F401,F403
from .metaformer import *  # noqa: E402,F401,F403
from .mlp_mixer import *  # noqa: E402,F401,F403
from .mobilenetv3 import *  # noqa: E402,F401,F403
from .mobilevit import *  # noqa: E402,F401,F403
from .nasnet import *  # noqa: E402,F401,F403
from .nest import *  # noqa: E402,F401,F403
from .nextvit import *  # noqa: E402,F401,F403
from .nfnet import *  # noqa: E402,F401,F403
from .pit import *  # noqa: E402,F401,F403
from .pnasnet import *  # noqa: E402,F401,F403
from .pvt_v2 import *  # noqa: E402,F401,F403
from .rdnet import *  # noqa: E402,F401,F403
from .regnet import *  # noqa: E402,F401,F403
from .repghost import *  # noqa: E402,F401,F403
from .repvit import *  # noqa: E402,F401,F403
from .res2net import *  # noqa: E402,F401,F403
from .resnest import *  # noqa: E402,F401,F403
from .resnet import *  # noqa: E402,F401,F403
from .resnetv2 import *  # noqa: E402,F401,F403
from .rexnet import *  # noqa: E402,F401,F403
from .selecsls import *  # noqa: E402,F401,F403
from .senet import *  # noqa: E402,F401,F403
from .sknet import *  # noqa: E402,F401,F403
from .starnet import *  # noqa: E402,F401,F403
from .swin_transformer import *  # noqa: E402,F401,F403
from .swin_transformer_v2 import *  # noqa: E402,F401,F403
from .swin_transformer_v2_cr import *  # noqa: E402,F401,F403
from .tiny_vit import *  # noqa: E402,F401,F403
from .tnt import *  # noqa: E402,F401,F403
from .tresnet import *  # noqa: E402,F401,F403
from .twins import *  # noqa: E402,F401,F403
from .visformer import *  # noqa: E402,F401,F403
from .vision_transformer import *  # noqa: E402,F401,F403
from .vision_transformer_hybrid import *  # noqa: E402,F401,F403
from .vision_transformer_relpos import *  # noqa: E402,F401,F403
from .volo import *  # noqa: E402,F401,F403
from .vovnet import *  # noqa: E402,F401,F403
from .xception import *  # noqa: E402,F401,F403
from .xception_aligned import *  # noqa: E402,F401,F403
from .xcit import *  # noqa: E402,F401,F403
