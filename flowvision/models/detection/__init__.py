"""Object detection models (torchvision.models.detection): Faster/Mask/Keypoint R-CNN, RetinaNet, FCOS, SSD."""
