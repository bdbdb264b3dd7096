"""Detect objects in an image with a pretrained detector: print the detections and draw them.

    flowvision detect IMAGE [--model fasterrcnn_resnet50_fpn] [--weights TAG|PATH] [--score 0.5] [-o boxes.png]
                      [--device auto]

IMAGE is any file Pillow reads, or a photo shipped with flowvision (chelsea.png). The model is a
detector of `flowvision models fasterrcnn maskrcnn keypointrcnn retinanet fcos ssd`; --weights is a
tag of its weights (default DEFAULT: COCO) or a local checkpoint of the model (any file engine.load
reads), preprocessed and labelled like DEFAULT. Detections scoring at least --score are
printed (best first, boxes as x1 y1 x2 y2 in the image's pixels) and drawn on the image with their
labels, plus masks and keypoints for the models that predict them (default output: IMAGE's name
with _boxes.png, in the current directory). Weights are downloaded once into
$FLOWVISION_HOME/checkpoints; FLOWVISION_OFFLINE=1 forbids downloads.
"""
import os

import numpy as np

from . import device as device_option
from . import EXIT_BAD_WEIGHTS, EXIT_UNKNOWN_MODEL, CLIError
from .classify import _check_model, choose_task_weights, load_checkpoint, load_pretrained, read_image, resolve_image
from .options import IMAGE_EXTENSIONS, check_output, unit_interval

MASK_THRESHOLD = 0.5


def configure(parser):
    """Add the detect arguments."""
    parser.add_argument("image", metavar="IMAGE", help="image file (or a shipped sample: chelsea.png)")
    parser.add_argument("--model", default="fasterrcnn_resnet50_fpn",
                        help="detection model (default: fasterrcnn_resnet50_fpn)")
    parser.add_argument("--weights", default="DEFAULT", metavar="TAG|PATH",
                        help="weights tag or local checkpoint (default: DEFAULT)")
    parser.add_argument("--score", type=unit_interval, default=0.5, help="lowest score shown, in [0, 1] (default: 0.5)")
    parser.add_argument("-o", "--output", default=None, help="image to write (default: IMAGE_boxes.png)")
    device_option.add_argument(parser)


def _is_detector(model):
    """Whether ``model`` has published weights that report a box mAP."""
    from flowvision.models import get_model_weights, list_pretrained

    if model not in list_pretrained():
        return False
    return any("box_map" in m for m in get_model_weights(model).DEFAULT.meta["_metrics"].values())


def detection_weights(model, tag):
    """The weights ``tag`` of ``model``, which must be a detector with published weights."""
    from flowvision.models import list_pretrained, resolve_weights

    if not _is_detector(model):
        detectors = [name for name in list_pretrained() if _is_detector(name)]
        raise CLIError(f"{model} is not a pretrained detection model; choose one of {', '.join(detectors)}",
                       EXIT_UNKNOWN_MODEL)
    try:
        return resolve_weights(model, weights=tag)
    except ValueError as e:
        raise CLIError(f"bad --weights: {e}", EXIT_BAD_WEIGHTS) from None


def detect(model, image_tensor, min_score):
    """The model's detections on one image as numpy arrays, those scoring below ``min_score`` dropped."""
    import engine

    with engine.no_grad():
        result = model([image_tensor])[0]
    result = {name: value.cpu().numpy() for name, value in result.items()}
    keep = result["scores"] >= min_score
    return {name: value[keep] for name, value in result.items()}


def summary(detections, categories):
    """One line per detection, best first: label, score and box."""
    lines = ["  score  label                 x1      y1      x2      y2"]
    for score, label, box in zip(detections["scores"], detections["labels"], detections["boxes"]):
        name = categories[label] if label < len(categories) else str(label)
        lines.append(f"  {score:5.3f}  {name:<16s} " + " ".join(f"{v:7.1f}" for v in box))
    return "\n".join(lines)


def draw(image, detections, categories):
    """``image`` (PIL, RGB) with the boxes and labels drawn, and masks / keypoints when present."""
    from PIL import Image

    import engine
    from flowvision.utils import draw_bounding_boxes, draw_keypoints, draw_segmentation_masks

    pixels = engine.from_numpy(np.ascontiguousarray(np.asarray(image).transpose(2, 0, 1)))
    if len(detections["boxes"]) == 0:
        return image
    if "masks" in detections:
        masks = engine.from_numpy(detections["masks"][:, 0] >= MASK_THRESHOLD)
        pixels = draw_segmentation_masks(pixels, masks, alpha=0.5)
    labels = [categories[i] if i < len(categories) else str(i) for i in detections["labels"]]
    pixels = draw_bounding_boxes(pixels, engine.from_numpy(detections["boxes"]), labels=labels, width=2)
    if "keypoints" in detections:
        pixels = draw_keypoints(pixels, engine.from_numpy(detections["keypoints"][..., :2]), colors="red", radius=3)
    return Image.fromarray(pixels.numpy().transpose(1, 2, 0))


def _fresh_detector(model, state_dict):
    """``model`` with random weights and no backbone download."""
    from flowvision.models import create_model

    return create_model(model, weights=None, weights_backbone=None)


def run(args):
    """Detect, print and draw."""
    path = resolve_image(args.image)
    _check_model(args.model)
    weights, checkpoint = choose_task_weights(args.model, args.weights, detection_weights)
    output = check_output(args.output or os.path.splitext(os.path.basename(path))[0] + "_boxes.png",
                          extensions=IMAGE_EXTENSIONS)
    image = read_image(path)
    device = device_option.choose(args.device)
    model = load_checkpoint(args.model, checkpoint, _fresh_detector) if checkpoint else load_pretrained(args.model,
                                                                                                      weights)
    detections = detect(model.eval().to(device), weights.transforms()(image).to(device), args.score)
    categories = weights.meta["categories"]
    draw(image, detections, categories).save(output)
    print(path)
    print(summary(detections, categories))
    print(f"{len(detections['boxes'])} detections with score >= {args.score}; drawn to {output}")
    return 0
