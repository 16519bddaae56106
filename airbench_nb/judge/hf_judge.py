"""A local transformers chat model as judge (``hf:<path>``): the same prompts as the API judges, on a GPU."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)


class HFChatJudge:
    """Greedy generation with a causal LM's chat template, batched with left padding.

    Args:
        path: Local folder or hub id of a chat model (loading from a folder works offline).
        batch_size: Conversations per ``generate`` call.
        device: ``cuda``, ``cpu`` or None (CUDA when available).
    """

    def __init__(self, path: str, batch_size: int = 8, device: str | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(self.device).eval()
        self.batch_size = batch_size

    def generate(
        self, conversations: Sequence[list[dict[str, Any]]], max_new_tokens: int = 64
    ) -> list[tuple[str | None, str | None]]:
        """Reply to each conversation: ``(text, None)`` or ``(None, error)`` per conversation, in order."""
        import torch

        out: list[tuple[str | None, str | None]] = []
        for start in range(0, len(conversations), self.batch_size):
            chunk = conversations[start : start + self.batch_size]
            try:
                prompts = [
                    self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chunk
                ]
                batch = self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)
                with torch.inference_mode():
                    generated = self.model.generate(
                        **batch,
                        max_new_tokens=max_new_tokens,
                        do_sample=False,
                        pad_token_id=self.tokenizer.pad_token_id,
                    )
                new = generated[:, batch["input_ids"].shape[1] :]
                out += [(text.strip(), None) for text in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
            except Exception as exc:  # noqa: BLE001 - a failed chunk becomes per-item errors; judging goes on
                logger.error("hf judge chunk failed: %s", exc)
                out += [(None, f"{type(exc).__name__}: {exc}")] * len(chunk)
        return out
