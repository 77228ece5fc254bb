"""Runtime side of migrator (prove): prepare a model with torch.fx, validate it, verify a rewrite.

Importing this package does not import torch; its modules do.
"""
