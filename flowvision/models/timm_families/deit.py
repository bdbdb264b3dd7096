"""DeiT (Touvron et al. 2021, "Training data-efficient image transformers & distillation through attention")
and DeiT III (Touvron, Cord and Jégou 2022, "DeiT III: Revenge of the ViT"): timm's DeiT models.

DeiT models are Vision Transformers trained on ImageNet-1k alone with strong augmentation and
regularisation. The distilled ones add a learnt distillation token beside the class token; its final
state feeds a second head, ``head_dist``, trained against a convolutional teacher's predictions, and
inference averages the two heads. DeiT III models add layer scale to every residual branch and give
position embeddings to the patch tokens only. Model names, module names, ``state_dict`` keys and
initialisation follow timm (``VisionTransformer`` and ``VisionTransformerDistilled``), so timm's
checkpoints load with ``strict=True`` and give timm's outputs.
"""
import engine as torch
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._layers import distilled_output, trunc_normal_
from .vision_transformer import VisionTransformer

__all__ = []


class VisionTransformerDistilled(VisionTransformer):
    """A ViT with a distillation token ``dist_token`` after the class token and a second head ``head_dist``
    on its output (timm's ``VisionTransformerDistilled``; ``global_pool`` must be 'token').

    In eval mode, and in train mode by default, the output is the average of the two heads' logits; after
    ``set_distilled_training()`` train mode returns both, (class-token logits, distillation-token logits),
    for a loss against the labels and one against the teacher. Takes ``VisionTransformer``'s arguments.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": ("head", "head_dist")}

    def __init__(self, *args, weight_init="", **kwargs):
        super().__init__(*args, weight_init="skip", **kwargs)
        if self.global_pool != "token":
            raise ValueError("the distilled heads read the class and distillation tokens: global_pool must be 'token'")
        self.num_prefix_tokens = 2
        self.dist_token = nn.Parameter(torch.zeros(1, 1, self.embed_dim))
        embed_len = self.patch_embed.num_patches + (0 if self.no_embed_class else self.num_prefix_tokens)
        self.pos_embed = nn.Parameter(torch.zeros(1, embed_len, self.embed_dim))
        self.head_dist = self._new_head(self.num_classes)
        self.distilled_training = False
        if weight_init != "skip":
            self.init_weights()

    def init_weights(self):
        """A truncated-normal distillation token (std 0.02), then ``VisionTransformer``'s scheme."""
        trunc_normal_(self.dist_token, std=0.02)
        super().init_weights()

    def get_classifier(self):
        """The two heads: (class token's, distillation token's)."""
        return self.head, self.head_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """New (default-initialised) heads for ``num_classes`` (0: identities); the pooling stays 'token'."""
        if global_pool not in (None, "", "token"):
            raise ValueError("the distilled heads read the class and distillation tokens: global_pool must be 'token'")
        self.num_classes = num_classes
        self.head = self._new_head(num_classes)
        self.head.train(self.training)
        self.head_dist = self._new_head(num_classes)
        self.head_dist.train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def _prefix_tokens(self, batch):
        """The class token, then the distillation token, expanded to the batch."""
        return [self.cls_token.expand(batch, -1, -1), self.dist_token.expand(batch, -1, -1)]

    def forward_head(self, x, pre_logits=False):
        """Both heads on their tokens (after head dropout): their average, or both in distilled training;
        with ``pre_logits`` the average of the two tokens."""
        x, x_dist = x[:, 0], x[:, 1]
        x = self.head_drop(x)
        x_dist = self.head_drop(x_dist)
        if pre_logits:
            return (x + x_dist) / 2
        x = self.head(x)
        x_dist = self.head_dist(x_dist)
        return distilled_output(self, x, x_dist)


def _deit(variant, pretrained, kwargs, distilled=False, **model_args):
    """A DeiT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    model_cls = VisionTransformerDistilled if distilled else VisionTransformer
    return build_model(model_cls, variant, pretrained, **{**model_args, **kwargs})


_DEIT3 = dict(no_embed_class=True, init_values=1e-6)


@register_model
def deit_tiny_patch16_224(pretrained=False, **kwargs):
    """DeiT-Ti/16 at 224: width 192, 12 blocks, 3 heads."""
    return _deit("deit_tiny_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=192, depth=12, num_heads=3)


@register_model
def deit_small_patch16_224(pretrained=False, **kwargs):
    """DeiT-S/16 at 224: width 384, 12 blocks, 6 heads."""
    return _deit("deit_small_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=384, depth=12, num_heads=6)


@register_model
def deit_base_patch16_224(pretrained=False, **kwargs):
    """DeiT-B/16 at 224: width 768, 12 blocks, 12 heads."""
    return _deit("deit_base_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=768, depth=12, num_heads=12)


@register_model
def deit_base_patch16_384(pretrained=False, **kwargs):
    """DeiT-B/16 at 384: width 768, 12 blocks, 12 heads."""
    return _deit("deit_base_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=768, depth=12,
                 num_heads=12)


@register_model
def deit_tiny_distilled_patch16_224(pretrained=False, **kwargs):
    """Distilled DeiT-Ti/16 at 224: width 192, 12 blocks, 3 heads, distillation token and head."""
    return _deit("deit_tiny_distilled_patch16_224", pretrained, kwargs, distilled=True, patch_size=16, embed_dim=192,
                 depth=12, num_heads=3)


@register_model
def deit_small_distilled_patch16_224(pretrained=False, **kwargs):
    """Distilled DeiT-S/16 at 224: width 384, 12 blocks, 6 heads, distillation token and head."""
    return _deit("deit_small_distilled_patch16_224", pretrained, kwargs, distilled=True, patch_size=16,
                 embed_dim=384, depth=12, num_heads=6)


@register_model
def deit_base_distilled_patch16_224(pretrained=False, **kwargs):
    """Distilled DeiT-B/16 at 224: width 768, 12 blocks, 12 heads, distillation token and head."""
    return _deit("deit_base_distilled_patch16_224", pretrained, kwargs, distilled=True, patch_size=16,
                 embed_dim=768, depth=12, num_heads=12)


@register_model
def deit_base_distilled_patch16_384(pretrained=False, **kwargs):
    """Distilled DeiT-B/16 at 384: width 768, 12 blocks, 12 heads, distillation token and head."""
    return _deit("deit_base_distilled_patch16_384", pretrained, kwargs, distilled=True, img_size=384, patch_size=16,
                 embed_dim=768, depth=12, num_heads=12)


@register_model
def deit3_small_patch16_224(pretrained=False, **kwargs):
    """DeiT III-S/16 at 224: width 384, 12 blocks, 6 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_small_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=384, depth=12, num_heads=6,
                 **_DEIT3)


@register_model
def deit3_small_patch16_384(pretrained=False, **kwargs):
    """DeiT III-S/16 at 384: width 384, 12 blocks, 6 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_small_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=384, depth=12,
                 num_heads=6, **_DEIT3)


@register_model
def deit3_medium_patch16_224(pretrained=False, **kwargs):
    """DeiT III-M/16 at 224: width 512, 12 blocks, 8 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_medium_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=512, depth=12, num_heads=8,
                 **_DEIT3)


@register_model
def deit3_base_patch16_224(pretrained=False, **kwargs):
    """DeiT III-B/16 at 224: width 768, 12 blocks, 12 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_base_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=768, depth=12, num_heads=12,
                 **_DEIT3)


@register_model
def deit3_base_patch16_384(pretrained=False, **kwargs):
    """DeiT III-B/16 at 384: width 768, 12 blocks, 12 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_base_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=768, depth=12,
                 num_heads=12, **_DEIT3)


@register_model
def deit3_large_patch16_224(pretrained=False, **kwargs):
    """DeiT III-L/16 at 224: width 1024, 24 blocks, 16 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_large_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=1024, depth=24,
                 num_heads=16, **_DEIT3)


@register_model
def deit3_large_patch16_384(pretrained=False, **kwargs):
    """DeiT III-L/16 at 384: width 1024, 24 blocks, 16 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_large_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=1024,
                 depth=24, num_heads=16, **_DEIT3)


@register_model
def deit3_huge_patch14_224(pretrained=False, **kwargs):
    """DeiT III-H/14 at 224: width 1280, 32 blocks, 16 heads, layer scale, patch-only position embeddings."""
    return _deit("deit3_huge_patch14_224", pretrained, kwargs, patch_size=14, embed_dim=1280, depth=32,
                 num_heads=16, **_DEIT3)
