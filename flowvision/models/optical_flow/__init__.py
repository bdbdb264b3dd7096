"""Optical flow models: RAFT and RAFT-small (a pair of images in, the flow from the first to the second out).

``model(image1, image2, num_flow_updates=12)`` takes (N, 3, H, W) images scaled to [-1, 1], as ``OpticalFlow``
(the weights' ``transforms()``) makes them, and returns one (N, 2, H, W) flow per update; names, arguments and
state_dict keys follow ``torchvision.models.optical_flow``.
"""
from .raft import *  # noqa: F401,F403
from ..weights import Raft_Large_Weights, Raft_Small_Weights  # noqa: F401
