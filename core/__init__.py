"""Attention Lab's transformer core: pure PyTorch (no streamlit, plotly or transformers)."""
from .config import ModelConfig
from .model import Output, Transformer
from .trace import Trace

__all__ = ["ModelConfig", "Transformer", "Output", "Trace"]
