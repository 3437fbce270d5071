"""PyTorch eager on the model bench train trains: the host-cost baseline (issue #33).

GPT-2 in Hugging Face's layout (one c_attn projection, explicit attention with a causal mask, tanh
GELU, LayerNorm, tied head, dropout off, GPT-2's initialization), AdamW at 1e-4 (PyTorch's
defaults otherwise), one step on random tokens, the loss over every next token. One process, the
threads torch.set_num_threads gives, float32 or CPU autocast to bfloat16 (float32 master weights,
as bench train's --precision bf16).

Prints one line: eager precision=... step_ms=<median of the timed steps> loss=... blas=<the BLAS
library float32 products ran in, from the process's mappings> and, with
--op-profile FILE, profiles one more step (host operators, torch.profiler) into FILE for
`bin/fsdp bench ops`. Runs with Debian's python3-torch (1.13) or any later torch.
"""
import argparse
import contextlib
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x, bias):
        batch, length, width = x.shape
        q, k, v = self.c_attn(x).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + bias
        y = scores.softmax(dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x, bias):
        x = x + self.attn(self.ln_1(x), bias)
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, layers, width, heads, vocab, positions, recompute=False):
        super().__init__()
        self.recompute = recompute
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(positions, width)
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                # GPT-2's scaled initialization of the residual projections.
                residual = name.endswith("c_proj.weight")
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * layers) if residual else 0.02)

    def forward(self, tokens):
        length = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(length))
        bias = torch.full((length, length), float("-inf")).triu(1)
        for block in self.h:
            if self.recompute and torch.is_grad_enabled():
                # As FSDP2 with activation checkpointing per block (torchtitan's full AC): the
                # block's forward keeps no activations and runs again in backward.
                x = torch.utils.checkpoint.checkpoint(block, x, bias, use_reentrant=False)
            else:
                x = block(x, bias)
        return self.ln_f(x) @ self.wte.weight.t()


def loaded_blas():
    """The BLAS library this process mapped (torch's own, or the system's libblas.so.3), or "-"."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.rsplit("/", 1)[-1].lower()}
    return ",".join(sorted(paths)) or "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in [("layers", 12), ("width", 64), ("heads", 4), ("vocab", 512), ("seq", 16),
                          ("batch", 2), ("steps", 20), ("warmup", 3), ("threads", 1)]:
        parser.add_argument("--" + name, type=int, default=default)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--activation-checkpointing", action="store_true",
                        help="recompute each block in backward (torch.utils.checkpoint)")
    parser.add_argument("--op-profile", metavar="FILE")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    model = Gpt2(args.layers, args.width, args.heads, args.vocab, args.seq,
                 args.activation_checkpointing)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def compute():
        if args.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step():
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1))
        with compute():
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - start)
    print(f"eager precision={args.precision} threads={args.threads} step_ms={statistics.median(times) * 1000:.2f}"
          f" loss={loss.item():.4f} blas={loaded_blas()}", flush=True)
    if args.op_profile:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            step()
        profile.export_chrome_trace(args.op_profile)


if __name__ == "__main__":
    main()
