"""Computes the expected losses of PyTorchAdamWTest: a small GPT-2 trained 10 steps with
torch.optim.AdamW (lr 1e-3, weight decay 0.1 on all but biases and normalization weights, as
Hugging Face's Trainer), global-norm clipping at 1.0, and the loss of each step divided by the
target tokens of the whole step (Hugging Face's global token mean).

Writes, beside itself: config.json and model.safetensors (the initial weights, Hugging Face's
GPT-2 names), batches.json (each step's token ids and labels, -100 where nothing is predicted:
right padding and masked prompts), and prints the losses the test holds the project to.

Run once with any PyTorch (1.13 from Debian's python3-torch gave the committed numbers):
    /usr/bin/python3 reference.py
"""

import json
import math
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, POSITIONS, EMBD, LAYERS, HEADS = 64, 16, 16, 2, 2
ROWS, LENGTH, STEPS = 8, 8, 10
LR, WEIGHT_DECAY, MAX_GRAD_NORM = 1e-3, 0.1, 1.0

torch.manual_seed(0)
rng = np.random.RandomState(0)


def initial_weights():
    def normal(*shape, std=0.1):
        return torch.randn(*shape) * std

    w = {
        "transformer.wte.weight": normal(VOCAB, EMBD, std=0.3),
        "transformer.wpe.weight": normal(POSITIONS, EMBD),
        "transformer.ln_f.weight": 1 + normal(EMBD),
        "transformer.ln_f.bias": normal(EMBD),
    }
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = 1 + normal(EMBD)
            w[p + ln + ".bias"] = normal(EMBD)
        # Conv1D keeps its weight as [in, out].
        for name, (n_in, n_out) in {
            "attn.c_attn": (EMBD, 3 * EMBD),
            "attn.c_proj": (EMBD, EMBD),
            "mlp.c_fc": (EMBD, 4 * EMBD),
            "mlp.c_proj": (4 * EMBD, EMBD),
        }.items():
            w[p + name + ".weight"] = normal(n_in, n_out, std=0.2)
            w[p + name + ".bias"] = normal(n_out)
    return w


def write_safetensors(tensors, path):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = tensors[name].contiguous().numpy().astype("<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def batches():
    """Each step's rows: ids, and labels (the next token, -100 on padding and prompts)."""
    steps = []
    for _ in range(STEPS):
        ids, labels = [], []
        for _ in range(ROWS):
            length = rng.randint(3, LENGTH + 1)  # real tokens, then right padding
            prompt = rng.randint(0, length - 1)  # positions whose label is masked
            tokens = rng.randint(1, VOCAB, size=LENGTH + 1).tolist()
            row_ids = [tokens[t] if t < length else 0 for t in range(LENGTH)]
            row_labels = [
                tokens[t + 1] if prompt <= t < length - 1 else -100 for t in range(LENGTH)
            ]
            ids.append(row_ids)
            labels.append(row_labels)
        steps.append({"ids": ids, "labels": labels})
    return steps


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def forward(w, ids):
    b, t = ids.shape
    h = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:t]
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    head = EMBD // HEADS
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        x = torch.nn.functional.layer_norm(
            h, (EMBD,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5
        )
        qkv = x @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (z.view(b, t, HEADS, head).transpose(1, 2) for z in qkv.split(EMBD, 2))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(head)
        scores = scores.masked_fill(~causal, float("-inf"))
        a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, EMBD)
        h = h + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        x = torch.nn.functional.layer_norm(
            h, (EMBD,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5
        )
        m = gelu_new(x @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        h = h + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    h = torch.nn.functional.layer_norm(
        h, (EMBD,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], 1e-5
    )
    return h @ w["transformer.wte.weight"].t()  # the head is tied to the embedding


def main():
    weights = initial_weights()
    steps = batches()
    config = {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": VOCAB,
        "n_positions": POSITIONS,
        "n_embd": EMBD,
        "n_layer": LAYERS,
        "n_head": HEADS,
        "activation_function": "gelu_new",
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": True,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    with open(os.path.join(HERE, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(weights, os.path.join(HERE, "model.safetensors"))
    with open(os.path.join(HERE, "batches.json"), "w") as f:
        json.dump(steps, f, separators=(",", ":"))
        f.write("\n")

    params = {n: t.clone().requires_grad_(True) for n, t in weights.items()}
    # Hugging Face's rule: no decay for biases and LayerNorm weights.
    no_decay = [n for n in params if n.endswith(".bias") or ".ln_" in n]
    groups = [
        {"params": [p for n, p in params.items() if n not in no_decay], "weight_decay": WEIGHT_DECAY},
        {"params": [params[n] for n in no_decay], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for step in steps:
        ids = torch.tensor(step["ids"])
        labels = torch.tensor(step["labels"])
        logits = forward(params, ids)
        total = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-100, reduction="sum"
        )
        loss = total / (labels != -100).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    print("torch", torch.__version__)
    print("LOSSES = {" + ", ".join(repr(v) for v in losses) + "};")


if __name__ == "__main__":
    main()
