"""Observers on the prepared graph: capture, annotate per module, calibrate, report.

Importing this package does not import torch; its modules do.
"""
