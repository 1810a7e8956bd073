"""PyTorch's module path ``torch.nn.modules.linear_cross_entropy`` (the chunked loss's private machinery there,
public names none); ember's chunked linear cross-entropy is ``nn.functional.linear_cross_entropy``."""
__all__: list = []
