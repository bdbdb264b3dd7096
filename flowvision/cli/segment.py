"""Segment an image with a pretrained model: write it with the class mask drawn over it, print the classes found.

    flowvision segment IMAGE [--model deeplabv3_resnet50] [--weights TAG|PATH] [-o overlay.png] [--alpha 0.6]
                       [--graph] [--device auto]

IMAGE is any file Pillow reads, or a photo shipped with flowvision (chelsea.png). The model is a
segmentation model of `flowvision models fcn deeplab lraspp`; --weights is a tag of its weights
(default DEFAULT: COCO with the 21 VOC classes) or a local checkpoint of the model (any file
engine.load reads), preprocessed and labelled like DEFAULT. The overlay is written at the image's
own size (default: IMAGE's name with _overlay.png, in the current directory). Weights are
downloaded once into $FLOWVISION_HOME/checkpoints; FLOWVISION_OFFLINE=1 forbids downloads.
"""
import os

import numpy as np

from . import device as device_option
from . import EXIT_BAD_WEIGHTS, EXIT_UNKNOWN_MODEL, CLIError
from .classify import (_check_model, as_graph, choose_task_weights, graph_base, load_checkpoint, load_pretrained,
                       read_image, resolve_image)
from .options import IMAGE_EXTENSIONS, check_output, unit_interval

# a color per class index (VOC's palette order); index 0, the background, is never drawn
PALETTE = ["black", "maroon", "green", "olive", "navy", "purple", "teal", "gray", "red", "lime", "yellow", "blue",
           "fuchsia", "aqua", "orange", "sienna", "darkgreen", "pink", "gold", "indigo", "coral"]


def configure(parser):
    """Add the segment arguments."""
    parser.add_argument("image", metavar="IMAGE", help="image file (or a shipped sample: chelsea.png)")
    parser.add_argument("--model", default="deeplabv3_resnet50", help="segmentation model (default: deeplabv3_resnet50)")
    parser.add_argument("--weights", default="DEFAULT", metavar="TAG|PATH",
                        help="weights tag or local checkpoint (default: DEFAULT)")
    parser.add_argument("-o", "--output", default=None, help="overlay image to write (default: IMAGE_overlay.png)")
    parser.add_argument("--alpha", type=unit_interval, default=0.6, help="mask opacity in [0, 1] (default: 0.6)")
    parser.add_argument("--graph", action="store_true", help="run the model as a static engine.nn.Graph")
    device_option.add_argument(parser)


def segmentation_weights(model, tag):
    """The weights ``tag`` of ``model``, which must be a segmentation model with published weights."""
    from flowvision.models import get_model_weights, list_pretrained, resolve_weights

    metrics = get_model_weights(model).DEFAULT.meta["_metrics"] if model in list_pretrained() else {}
    if not any("miou" in m for m in metrics.values()):
        raise CLIError(f"{model} is not a pretrained segmentation model; choose one of "
                       "fcn_resnet50, fcn_resnet101, deeplabv3_resnet50, deeplabv3_resnet101, "
                       "deeplabv3_mobilenet_v3_large, lraspp_mobilenet_v3_large", EXIT_UNKNOWN_MODEL)
    try:
        return resolve_weights(model, weights=tag)
    except ValueError as e:
        raise CLIError(f"bad --weights: {e}", EXIT_BAD_WEIGHTS) from None


def predict_labels(runner, batch):
    """Per-pixel class indices (H, W) of the model's ``out`` logits for a (1, 3, H, W) batch."""
    import engine

    with engine.no_grad():
        logits = runner(batch)["out"]
    return logits.cpu().numpy()[0].argmax(axis=0)


def overlay(image, labels, alpha):
    """``image`` (PIL, RGB) with one colored mask per non-background class of ``labels`` (resized to fit)."""
    from PIL import Image

    import engine
    from flowvision.utils import draw_segmentation_masks

    labels = np.asarray(Image.fromarray(labels.astype(np.uint8)).resize(image.size, Image.NEAREST))
    classes = [int(c) for c in np.unique(labels) if c != 0]
    pixels = engine.from_numpy(np.ascontiguousarray(np.asarray(image).transpose(2, 0, 1)))
    if not classes:
        return image, labels
    masks = engine.from_numpy(np.stack([labels == c for c in classes]))
    drawn = draw_segmentation_masks(pixels, masks, alpha=alpha, colors=[PALETTE[c % len(PALETTE)] for c in classes])
    return Image.fromarray(drawn.numpy().transpose(1, 2, 0)), labels


def summary(labels, categories):
    """Lines naming each class found, largest area first, with its share of the pixels."""
    counts = np.bincount(labels.ravel(), minlength=len(categories))
    order = [int(c) for c in np.argsort(-counts, kind="stable") if counts[c] > 0]
    lines = ["  class  pixels  name"]
    for c in order:
        lines.append(f"  {c:5d}  {100.0 * counts[c] / labels.size:5.1f}%  {categories[c]}")
    return "\n".join(lines)


def _fresh_segmenter(model, state_dict):
    """``model`` with random weights and no backbone download, with the checkpoint's auxiliary head if it has one."""
    from flowvision.models import create_model

    aux = any(key.startswith("aux_classifier.") for key in state_dict)
    return create_model(model, weights=None, weights_backbone=None, aux_loss=aux)


def run(args):
    """Segment the image, write the overlay and print the classes."""
    path = resolve_image(args.image)
    _check_model(args.model)
    weights, checkpoint = choose_task_weights(args.model, args.weights, segmentation_weights)
    output = check_output(args.output or os.path.splitext(os.path.basename(path))[0] + "_overlay.png",
                          extensions=IMAGE_EXTENSIONS)
    image = read_image(path)
    device = device_option.choose(args.device)
    model = load_checkpoint(args.model, checkpoint, _fresh_segmenter) if checkpoint else load_pretrained(args.model,
                                                                                                       weights)
    model = model.eval().to(device)
    runner = as_graph(model, graph_base()) if args.graph else model
    batch = weights.transforms()([image]).to(device)
    labels = predict_labels(runner, batch)
    drawn, full_labels = overlay(image, labels, args.alpha)
    drawn.save(output)
    print(path)
    print(summary(full_labels, weights.meta["categories"]))
    print(f"overlay written to {output}")
    return 0
