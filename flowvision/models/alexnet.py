"""AlexNet (Krizhevsky 2014, "One weird trick for parallelizing convolutional neural networks").

The single-tower variant of the 2012 network (Krizhevsky, Sutskever & Hinton, "ImageNet
Classification with Deep Convolutional Neural Networks") that torchvision ships: five convolutions
and three fully connected layers. Module names, state_dict keys and initialisation (the layers'
defaults) follow torchvision, so its checkpoints load directly; the model API
(``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``) follows timm.
"""
import engine as torch
from engine import nn

from ._features import sequential_feature_info
from ._helpers import build_model
from .registry import register_model

__all__ = ["AlexNet"]


class AlexNet(nn.Module):
    """Five convolutions with three max pools, adaptive pooling to 6x6, then three linear layers with dropout.

    ``num_classes=0`` replaces the last linear layer with an identity (the 4096 pre-logits).
    """

    default_cfg = {"first_conv": "features.0", "classifier": "classifier.6"}

    def __init__(self, num_classes=1000, dropout=0.5, in_chans=3):
        super().__init__()
        self.num_classes = num_classes
        self.num_features = 4096
        self.head_hidden_size = self.num_features
        self.features = nn.Sequential(
            nn.Conv2d(in_chans, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.feature_info = sequential_feature_info(self.features, in_chans=in_chans)
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            self._linear(num_classes),
        )

    def _linear(self, num_classes):
        """The final linear layer (the layer's default init), or an identity when ``num_classes`` is 0."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[6]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return the pre-logits)."""
        self.num_classes = num_classes
        self.classifier[6] = self._linear(num_classes)

    def forward_features(self, x):
        """The feature map after the last max pool (N, 256, about H/32, W/32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Pool to 6x6, flatten, the two hidden layers; then the final linear layer unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        for layer in list(self.classifier)[:6]:
            x = layer(x)
        return x if pre_logits else self.classifier[6](x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def alexnet(pretrained=False, progress=True, **kwargs):
    """AlexNet, torchvision's single-tower variant."""
    return build_model(AlexNet, "alexnet", pretrained, progress=progress, **kwargs)
