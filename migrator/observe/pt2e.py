"""The torchao pt2e names migrator builds on, imported without torchao's start-up noise.

torchao logs a warning for every optional C++ extension it cannot load on this machine (CUDA
kernels on a CPU box) and torch logs a deprecation warning for one of torchao's enums. Both
are logged once, at import, through standard `logging`; they are muted for the import only.
"""

from __future__ import annotations

from migrator.graph import quiet_loggers

_NOISY_IMPORT_LOGGERS = ("torchao", "torch.utils._pytree")


with quiet_loggers(_NOISY_IMPORT_LOGGERS):
    from torchao.quantization.pt2e.observer import (
        FixedQParamsObserver,
        MinMaxObserver,
        ObserverBase,
        PerChannelMinMaxObserver,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import (
        FixedQParamsQuantizationSpec,
        QuantizationAnnotation,
        QuantizationSpec,
        Quantizer,
        SharedQuantizationSpec,
    )
    from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

__all__ = [
    "FixedQParamsObserver",
    "FixedQParamsQuantizationSpec",
    "MinMaxObserver",
    "Q_ANNOTATION_KEY",
    "ObserverBase",
    "PerChannelMinMaxObserver",
    "QuantizationAnnotation",
    "QuantizationSpec",
    "Quantizer",
    "SharedQuantizationSpec",
    "convert_pt2e",
    "prepare_pt2e",
]
