"""Optical flow: RAFT (large and small) with torchvision's names and state-dict keys."""
from .raft import RAFT, Raft_Large_Weights, Raft_Small_Weights, raft_large, raft_small
