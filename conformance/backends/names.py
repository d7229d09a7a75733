"""Short backend names -> ``"module:attr"`` of the adapter (imported only when selected).

A plain table, not registration by import side effect: resolving a name imports just
that adapter; an unknown name is an error listing these.
"""

from __future__ import annotations

__all__ = ["BUILTIN_BACKENDS", "BACKEND_LIBRARIES"]

BUILTIN_BACKENDS: dict[str, str] = {
    "numpy": "conformance.backends.numpy_backend:NumpyBackend",
    "numba": "conformance.backends.numba_backend:NumbaBackend",
    "emulated-fp32": "conformance.backends.emulated:Float32Emulation",
    # JAX and MLX libraries (conformance/backends/<library>.py)
    "keras-hub": "conformance.backends.keras_hub:KerasHubBackend",
    "penzai": "conformance.backends.penzai:PenzaiBackend",
    "mlx": "conformance.backends.mlx:MlxBackend",
    "mlx-lm": "conformance.backends.mlx_lm:MlxLmBackend",
    # torch-based libraries (conformance/backends/<library>.py)
    "hf": "conformance.backends.hf:HFBackend",
    "hf-gptj": "conformance.backends.hf:HFGPTJBackend",
    "inductor": "conformance.backends.inductor:InductorBackend",
    "torchtune": "conformance.backends.torchtune:TorchtuneBackend",
    "torchtune-qwen2": "conformance.backends.torchtune:TorchtuneQwen2Backend",
    "rotary-embedding-torch": "conformance.backends.rotary_embedding_torch:RotaryEmbeddingTorchBackend",
    "litgpt": "conformance.backends.litgpt:LitGPTBackend",
    "liger": "conformance.backends.liger:LigerBackend",
    "flash-attn-triton": "conformance.backends.flash_attn_triton:FlashAttnTritonBackend",
    "flash-attn": "conformance.backends.flash_attn:FlashAttnBackend",
    "vllm": "conformance.backends.vllm:VLLMBackend",
    "transformer-engine": "conformance.backends.transformer_engine:TransformerEngineBackend",
    # ONNX RotaryEmbedding (conformance/backends/onnxruntime.py, onnx_reference.py)
    "onnxruntime": "conformance.backends.onnxruntime:OnnxRuntimeBackend",
    "onnxruntime-contrib": "conformance.backends.onnxruntime:OnnxRuntimeContribBackend",
    "onnx-reference": "conformance.backends.onnx_reference:OnnxReferenceBackend",
    # ggml, the C kernels of llama.cpp, through the ggml-python bindings (conformance/backends/ggml.py)
    "ggml": "conformance.backends.ggml:GgmlBackend",
    # OpenVINO's CPU plugin on exporter-pattern graphs (conformance/backends/openvino.py)
    "openvino": "conformance.backends.openvino:OpenVinoBackend",
    "openvino-split": "conformance.backends.openvino:OpenVinoSplitBackend",
}

#: The distributions each built-in backend runs on (their versions head every report; a user
#: backend may list its own in a ``libraries`` attribute).
BACKEND_LIBRARIES: dict[str, tuple[str, ...]] = {
    "numpy": ("numpy",),
    "numba": ("numba",),
    "emulated-fp32": ("numpy",),
    "keras-hub": ("jax", "keras", "keras-hub"),
    "penzai": ("jax", "penzai"),
    "mlx": ("mlx",),
    "mlx-lm": ("mlx", "mlx-lm"),
    "hf": ("torch", "transformers"),
    "hf-gptj": ("torch", "transformers"),
    "inductor": ("torch", "transformers"),
    "torchtune": ("torch", "torchtune"),
    "torchtune-qwen2": ("torch", "torchtune"),
    "rotary-embedding-torch": ("torch", "rotary-embedding-torch"),
    "litgpt": ("torch", "litgpt"),
    "liger": ("torch", "triton", "liger-kernel"),
    "flash-attn-triton": ("torch", "triton", "flash-attn"),
    "flash-attn": ("torch", "flash-attn"),
    "vllm": ("torch", "vllm"),
    "transformer-engine": ("torch", "transformer-engine"),
    "onnxruntime": ("onnx", "onnxruntime"),
    "onnxruntime-contrib": ("onnx", "onnxruntime"),
    "onnx-reference": ("onnx",),
    "ggml": ("ggml-python",),
    "openvino": ("openvino",),
    "openvino-split": ("openvino",),
}
