"""Object detection, instance segmentation and person key points: torchvision's detection models with its
constructor arguments, module names and state-dict keys."""
