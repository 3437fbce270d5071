"""PyTorch FSDP2 (fully_shard) on the shape of `bin/fsdp bench train`: a GPT-2 of pre-norm blocks
(learned positions, tied head, no dropout), AdamW at lr 1e-4 on random tokens, each block a unit and
the root sharded last, as FULL_SHARD. --dtype bfloat16 is FSDP2's mixed precision as bench train's
--precision bf16 is: float32 parameters, optimizer state and gradient reduction, bfloat16
all-gathers and compute (MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)).
--model llama is a plain-PyTorch Llama as bench train --model llama builds it (RMSNorm, rotary
positions, grouped-query attention through scaled_dot_product_attention, a SwiGLU MLP of
--intermediate, an untied head; Llama 3's rope theta 500000, its llama3 frequency scaling left out:
it changes no cost), each decoder layer a unit and the root last. --checkpoint recomputes each
layer in backward (torch.utils.checkpoint), as bench train's FULL_SHARD does by default.
Rank 0 prints one line like bench train's, with tokens/s and the peak GPU memory PyTorch allocated
on a rank. --op-profile FILE then profiles one more step (torch.profiler, host operators only) and
rank 0 writes its Chrome trace to FILE, for `bin/fsdp bench ops` beside bench train --op-profile's.
Run with torchrun (python -m torch.distributed.run).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class Gpt2(nn.Module):
    def __init__(self, layers, width, heads, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, tokens):
        seq = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(seq, device=tokens.device))
        # In the compute dtype: attention takes a float mask of the query's dtype only.
        mask = torch.triu(torch.full((seq, seq), float("-inf"), device=tokens.device, dtype=x.dtype), 1)
        for block in self.h:
            x = block(x, mask)
        return self.ln_f(x) @ self.wte.weight.t()


class RmsNorm(nn.Module):
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class LlamaLayer(nn.Module):
    def __init__(self, width, heads, kv_heads, intermediate):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.input_layernorm = RmsNorm(width)
        self.q_proj = nn.Linear(width, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, width, bias=False)
        self.post_attention_layernorm = RmsNorm(width)
        self.gate_proj = nn.Linear(width, intermediate, bias=False)
        self.up_proj = nn.Linear(width, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, width, bias=False)

    def forward(self, x, cos, sin):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(attention.transpose(1, 2).reshape(batch, seq, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, layers, width, heads, kv_heads, intermediate, vocab, checkpoint):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, width)
        self.h = nn.ModuleList(LlamaLayer(width, heads, kv_heads, intermediate) for _ in range(layers))
        self.norm = RmsNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.head_dim, self.checkpoint = width // heads, checkpoint

    def forward(self, tokens):
        seq = tokens.shape[1]
        x = self.embed_tokens(tokens)
        inverse = 1.0 / (500000.0 ** (torch.arange(0, self.head_dim, 2, device=tokens.device).float() / self.head_dim))
        angles = torch.outer(torch.arange(seq, device=tokens.device).float(), inverse)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        for layer in self.h:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, use_reentrant=False)
            else:
                x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def main():
    parser = argparse.ArgumentParser()
    for name, default in [("layers", 6), ("width", 384), ("heads", 6), ("vocab", 50257), ("seq", 128),
                          ("batch", 8), ("steps", 10), ("warmup", 2)]:
        parser.add_argument("--" + name, type=int, default=default)
    parser.add_argument("--model", choices=["gpt2", "llama"], default="gpt2")
    parser.add_argument("--kv-heads", type=int, default=0, help="llama: 0 for a quarter of --heads")
    parser.add_argument("--intermediate", type=int, default=0, help="llama: 0 for 8/3 --width to 64")
    parser.add_argument("--checkpoint", action="store_true", help="recompute each layer in backward")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--op-profile", metavar="FILE")
    args = parser.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    torch.manual_seed(42)
    if args.model == "llama":
        # bench train --model llama's proportions where not given (BenchModel).
        kv_heads = args.kv_heads or (args.heads // 4 if args.heads % 4 == 0 else args.heads)
        intermediate = args.intermediate or ((8 * args.width + 2) // 3 + 63) // 64 * 64
        model = Llama(args.layers, args.width, args.heads, kv_heads, intermediate, args.vocab, args.checkpoint)
    else:
        model = Gpt2(args.layers, args.width, args.heads, args.vocab, args.seq)
    model = model.to(device)
    policy = MixedPrecisionPolicy()
    if args.dtype == "bfloat16":
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.h:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    # The batch is per rank, as bench train's --batch is.
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=device)

    def step():
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / args.steps
    peak = torch.tensor([torch.cuda.max_memory_allocated(device)], device=device)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if rank == 0:
        tokens_per_s = world * args.batch * args.seq / seconds
        parameters = sum(p.numel() for p in model.parameters())  # DTensors count the whole parameter
        print(f"fsdp2 model={args.model} parameters={parameters} dtype={args.dtype} nproc={world} tokens_per_s={tokens_per_s:.1f} step_ms={seconds * 1000:.1f}"
              f" peak_allocated_mb_per_rank={peak.item() / 1e6:.1f} loss={loss.item():.4f}", flush=True)
    if args.op_profile:
        # After the measurements, as it slows the step it profiles; every rank steps, rank 0 writes.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            step()
        torch.cuda.synchronize()
        if rank == 0:
            profile.export_chrome_trace(args.op_profile)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
