"""Computes the expected numbers of FamilyExactnessTest: for each model family built on Llama's
block, a small random model with the family's own features switched on, its logits on fixed
tokens and the gradient of the next-token cross-entropy with respect to every parameter, in
float32, by an implementation of Hugging Face's modeling math written here from scratch in plain
PyTorch (no transformers):

  llama3   Llama 3.x: rope_scaling llama3 (factor 8, low 1, high 4, original 64; head_dim 8 at
           rope_theta 5000 puts one frequency in each band), positions to 71, mlp_bias, 4 query
           heads on 1 key-value head, untied head
  linear   Llama with rope_scaling linear (factor 2), attention_bias, tied head
  dynamic  Llama with rope_scaling dynamic (factor 2) on 24 positions past 16
  mistral  Mistral: sliding_window 5 on 16 positions, 4 query heads on 1 key-value head
  qwen2    Qwen2: biases on q/k/v, none on o, rope_theta 1e6, tied head
  qwen3    Qwen3: q_norm and k_norm, head_dim 8 where hidden / heads is 4, tied head

Writes one directory per case beside itself: config.json and model.safetensors (a Hugging Face
checkpoint, tied weights stored once), expected.safetensors (logits and grad.<parameter>) and
expected.json (the token ids and the loss).

Run once with any PyTorch (1.13 from Debian's python3-torch gave the committed numbers):
    /usr/bin/python3 reference.py
"""

import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, HIDDEN, INTERMEDIATE, LAYERS, BATCH = 16, 16, 16, 2, 2

BASE = {
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": INTERMEDIATE,
    "num_hidden_layers": LAYERS,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "bos_token_id": 1,
    "eos_token_id": 2,
}

CASES = {
    "llama3": dict(
        model_type="llama", num_attention_heads=4, num_key_value_heads=1, head_dim=8,
        rope_theta=5000.0, max_position_embeddings=512, mlp_bias=True,
        tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        length=72),
    "linear": dict(
        model_type="llama", num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0,
        max_position_embeddings=64, attention_bias=True, tie_word_embeddings=True,
        rope_scaling={"type": "linear", "factor": 2.0}, length=12),
    "dynamic": dict(
        model_type="llama", num_attention_heads=2, num_key_value_heads=2, rope_theta=10000.0,
        max_position_embeddings=16, tie_word_embeddings=False,
        rope_scaling={"rope_type": "dynamic", "factor": 2.0}, length=24),
    "mistral": dict(
        model_type="mistral", num_attention_heads=4, num_key_value_heads=1, rope_theta=10000.0,
        max_position_embeddings=64, sliding_window=5, tie_word_embeddings=False, length=16),
    "qwen2": dict(
        model_type="qwen2", num_attention_heads=4, num_key_value_heads=2, rope_theta=1e6,
        max_position_embeddings=64, tie_word_embeddings=True, use_sliding_window=False,
        sliding_window=32768, max_window_layers=2, length=12),
    "qwen3": dict(
        model_type="qwen3", num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        rope_theta=1e6, max_position_embeddings=64, tie_word_embeddings=True,
        attention_bias=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=2, length=12),
}

ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def weights(c):
    """Random weights with Hugging Face's names; norms around 1 so each one matters."""
    d, h, kv = head_dim(c), c["num_attention_heads"], c["num_key_value_heads"]
    qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    o_bias = c["model_type"] != "qwen2" and c.get("attention_bias", False)
    mlp_bias = c.get("mlp_bias", False)

    def normal(*shape, std=0.3):
        return torch.randn(*shape) * std

    w = {"model.embed_tokens.weight": normal(VOCAB, HIDDEN, std=1.0),
         "model.norm.weight": 1 + normal(HIDDEN, std=0.2)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(VOCAB, HIDDEN)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1 + normal(HIDDEN, std=0.2)
        w[p + "post_attention_layernorm.weight"] = 1 + normal(HIDDEN, std=0.2)
        for name, (n_in, n_out, bias) in {
            "self_attn.q_proj": (HIDDEN, h * d, qkv_bias),
            "self_attn.k_proj": (HIDDEN, kv * d, qkv_bias),
            "self_attn.v_proj": (HIDDEN, kv * d, qkv_bias),
            "self_attn.o_proj": (h * d, HIDDEN, o_bias),
            "mlp.gate_proj": (HIDDEN, INTERMEDIATE, mlp_bias),
            "mlp.up_proj": (HIDDEN, INTERMEDIATE, mlp_bias),
            "mlp.down_proj": (INTERMEDIATE, HIDDEN, mlp_bias),
        }.items():
            w[p + name + ".weight"] = normal(n_out, n_in, std=1 / math.sqrt(n_in))
            if bias:
                w[p + name + ".bias"] = normal(n_out, std=0.1)
        if c["model_type"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = 1 + normal(d, std=0.2)
            w[p + "self_attn.k_norm.weight"] = 1 + normal(d, std=0.2)
    return w


def inverse_frequencies(c, seq_len):
    """Hugging Face's rope init functions (default, linear, dynamic, llama3), float32."""
    d, base = head_dim(c), c["rope_theta"]
    scaling = c.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "dynamic":
        limit = c["max_position_embeddings"]
        if seq_len > limit:  # a 0-d int64 tensor, as the dynamic update passes it
            factor = scaling["factor"]
            base = base * ((factor * seq_len / limit) - (factor - 1)) ** (d / (d - 2))
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, low, high = (scaling[k] for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old = scaling["original_max_position_embeddings"]
        wavelength = 2 * math.pi / inv
        scaled = torch.where(wavelength > old / low, inv / factor, inv)
        smooth = (old / wavelength - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelength >= old / high) & (wavelength <= old / low)
        inv = torch.where(medium, blended, scaled)
    return inv


def rms_norm(x, weight, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def linear(x, w, name):
    y = x @ w[name + ".weight"].t()
    return y + w[name + ".bias"] if name + ".bias" in w else y


def forward(c, w, ids):
    b, t = ids.shape
    d, h, kv = head_dim(c), c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]
    positions = torch.arange(t).unsqueeze(0).expand(b, t)
    inv = inverse_frequencies(c, positions.max() + 1)
    angles = positions.float().unsqueeze(-1) * inv
    emb = torch.cat((angles, angles), dim=-1).unsqueeze(1)
    cos, sin = emb.cos(), emb.sin()

    query = torch.arange(t).unsqueeze(1)
    key = torch.arange(t).unsqueeze(0)
    allowed = key <= query
    window = c.get("sliding_window") if c["model_type"] == "mistral" else None
    if window:
        allowed = allowed & (key > query - window)
    mask = torch.zeros(t, t).masked_fill(~allowed, torch.finfo(torch.float32).min)

    x = w["model.embed_tokens.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(a, w, p + "self_attn.q_proj").view(b, t, h, d)
        k = linear(a, w, p + "self_attn.k_proj").view(b, t, kv, d)
        v = linear(a, w, p + "self_attn.v_proj").view(b, t, kv, d).transpose(1, 2)
        if c["model_type"] == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(h // kv, dim=1)
        v = v.repeat_interleave(h // kv, dim=1)
        scores = q @ k.transpose(2, 3) / math.sqrt(d) + mask
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h * d)
        x = x + linear(y, w, p + "self_attn.o_proj")
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(m, w, p + "mlp.gate_proj")
        x = x + linear(torch.nn.functional.silu(gate) * linear(m, w, p + "mlp.up_proj"), w,
                       p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ head.t()


def write_safetensors(tensors, path):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
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


def main():
    for seed, (name, case) in enumerate(CASES.items()):
        torch.manual_seed(seed)
        case = dict(case)
        length = case.pop("length")
        config = dict(BASE, **case)
        config["architectures"] = [ARCHITECTURES[config["model_type"]]]
        w = {k: v.requires_grad_() for k, v in weights(config).items()}
        ids = torch.randint(0, VOCAB, (BATCH, length))
        logits = forward(config, w, ids)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        loss.backward()

        out = os.path.join(HERE, name)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        write_safetensors(w, os.path.join(out, "model.safetensors"))
        expected = {"logits": logits}
        expected.update({"grad." + k: v.grad for k, v in w.items()})
        write_safetensors(expected, os.path.join(out, "expected.safetensors"))
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump({"input_ids": ids.tolist(), "loss": loss.item()}, f)
        print(name, "loss", loss.item())


if __name__ == "__main__":
    main()
