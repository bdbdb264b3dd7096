"""Visual utilities (image grids, box/mask/keypoint drawing) and the standard category names."""
from .categories import COCO_CATEGORIES, IMAGENET_CATEGORIES, VOC_CATEGORIES
from .visualization import (draw_bounding_boxes, draw_keypoints, draw_segmentation_masks, flow_to_image, make_grid,
                            save_image)

__all__ = ["COCO_CATEGORIES", "IMAGENET_CATEGORIES", "VOC_CATEGORIES", "draw_bounding_boxes", "draw_keypoints",
           "draw_segmentation_masks", "flow_to_image", "make_grid", "save_image"]
