"""The ONNX round trip: export float and QDQ models, run them in onnxruntime, compare with torch.

Importing this package does not import torch; its modules do.
"""
