"""Small helpers shared by model families: channel rounding and ``IntermediateLayerGetter``."""
from collections import OrderedDict

from engine import nn

__all__ = ["IntermediateLayerGetter", "_make_divisible"]


def _make_divisible(v, divisor, min_value=None, round_limit=0.9):
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``), one step up where that would
    fall below ``round_limit * v`` (by default: never more than 10% below ``v``).

    Keeps channel counts hardware-friendly when widths are scaled (MobileNet's ``width_mult``).
    """
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


class IntermediateLayerGetter(nn.ModuleDict):
    """The top-level children of ``model`` up to the last one named in ``return_layers``.

    ``forward`` runs them in order and returns an ordered dict ``{return_layers[name]: output}``;
    the children keep their names, so state_dict keys are those of ``model``.
    """

    def __init__(self, model, return_layers):
        children = [name for name, _ in model.named_children()]
        if not set(return_layers).issubset(children):
            raise ValueError(f"return_layers are not present in model: {sorted(set(return_layers) - set(children))} "
                             f"not in {children}")
        orig_return_layers = return_layers
        wanted = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            wanted.pop(name, None)
            if not wanted:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


def init_mobilenet_weights(model):
    """The MobileNet recipe: kaiming-normal (fan_out) convolutions, unit/zero norms, N(0, 0.01) linears."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)


def linear_or_identity(in_features, num_classes, bias=True):
    """A linear layer with only its default initialisation, or an identity when ``num_classes`` is 0.

    Constructors use it so that their weight-init pass initialises the classifier in module order, as
    torchvision's do (initialising it on construction as well would draw from the random stream twice).
    """
    return nn.Linear(in_features, num_classes, bias=bias) if num_classes > 0 else nn.Identity()


def classifier_linear(in_features, num_classes):
    """A final linear layer with N(0, 0.01) weights, or an identity when ``num_classes`` is 0."""
    if num_classes <= 0:
        return nn.Identity()
    linear = nn.Linear(in_features, num_classes)
    nn.init.normal_(linear.weight, 0, 0.01)
    nn.init.zeros_(linear.bias)
    return linear
