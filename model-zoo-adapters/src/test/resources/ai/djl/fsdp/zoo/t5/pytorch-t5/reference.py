"""Computes the expected numbers of T5ExactnessTest: for each case a small random T5 (encoder and
decoder of different depths), its logits on a padded batch of sources and shifted labels, the
cross-entropy over the labels that are not -100, and the gradient of that loss with respect to
every parameter, in float32, by an implementation of Hugging Face's T5 math (T5ForConditional-
Generation) written here from scratch in plain PyTorch (no transformers):

  relu-tied     T5: feed_forward_proj relu, tied head (decoder output scaled by d_model^-0.5),
                2 encoder and 3 decoder blocks, 2 heads of d_kv 6 (12 != d_model 16),
                8 buckets up to distance 12 on 13 source positions
  gated-untied  T5 v1.1 / Flan-T5: gated-gelu (gelu_new of wi_0 times wi_1), untied head,
                3 encoder and 2 decoder blocks, 3 heads of d_kv 4, 10 buckets up to distance 16

Both: the second source row padded (attention mask 0) at its last 4 positions, the second label
row ignored (-100) at its last 3, decoder inputs shifted right from decoder_start_token_id with
-100 read as pad_token_id. expected.json also holds bucket tables (relative positions -300..300,
bidirectional and causal) for each case's settings and T5's 32 / 128.

Writes one directory per case beside itself: config.json and model.safetensors (a Hugging Face
checkpoint, the shared table stored once as shared.weight), expected.safetensors (logits and
grad.<parameter>) and expected.json.

Run once with any PyTorch (1.13 from Debian's python3-torch gave the committed numbers):
    /usr/bin/python3 reference.py
"""

import importlib.util
import json
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def _families_reference():
    """The decoder families' reference script, for its safetensors writer (file I/O, no math)."""
    path = os.path.join(HERE, "..", "..", "models", "pytorch-families", "reference.py")
    spec = importlib.util.spec_from_file_location("families_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


write_safetensors = _families_reference().write_safetensors
VOCAB, D_MODEL, BATCH, SOURCE, TARGET = 24, 16, 2, 13, 9

CASES = {
    "relu-tied": dict(feed_forward_proj="relu", tie_word_embeddings=True, num_layers=2,
                      num_decoder_layers=3, num_heads=2, d_kv=6, d_ff=24,
                      relative_attention_num_buckets=8, relative_attention_max_distance=12),
    "gated-untied": dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                         num_layers=3, num_decoder_layers=2, num_heads=3, d_kv=4, d_ff=20,
                         relative_attention_num_buckets=10, relative_attention_max_distance=16),
}


def config_of(case):
    c = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
         "vocab_size": VOCAB, "d_model": D_MODEL, "dropout_rate": 0.0,
         "layer_norm_epsilon": 1e-6, "initializer_factor": 1.0, "is_encoder_decoder": True,
         "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0}
    c.update(case)
    return c


def weights(c):
    """Random weights under Hugging Face's names; norms around 1 so each one matters."""
    inner = c["num_heads"] * c["d_kv"]

    def normal(*shape, std):
        return torch.randn(*shape) * std

    w = {"shared.weight": normal(VOCAB, D_MODEL, std=1.0)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = normal(VOCAB, D_MODEL, std=D_MODEL ** -0.5)
    for stack, depth in (("encoder", c["num_layers"]), ("decoder", c["num_decoder_layers"])):
        w[stack + ".final_layer_norm.weight"] = 1 + normal(D_MODEL, std=0.2)
        attentions = ["SelfAttention"] + (["EncDecAttention"] if stack == "decoder" else [])
        for i in range(depth):
            p = f"{stack}.block.{i}.layer."
            for j, name in enumerate(attentions):
                a = f"{p}{j}.{name}."
                w[a + "q.weight"] = normal(inner, D_MODEL, std=(D_MODEL * c["d_kv"]) ** -0.5)
                w[a + "k.weight"] = normal(inner, D_MODEL, std=D_MODEL ** -0.5)
                w[a + "v.weight"] = normal(inner, D_MODEL, std=D_MODEL ** -0.5)
                w[a + "o.weight"] = normal(D_MODEL, inner, std=inner ** -0.5)
                w[f"{p}{j}.layer_norm.weight"] = 1 + normal(D_MODEL, std=0.2)
                if i == 0 and name == "SelfAttention":
                    w[a + "relative_attention_bias.weight"] = normal(
                        c["relative_attention_num_buckets"], c["num_heads"], std=0.5)
            f = f"{p}{len(attentions)}."
            w[f + "layer_norm.weight"] = 1 + normal(D_MODEL, std=0.2)
            ins = ["wi_0", "wi_1"] if c["feed_forward_proj"] == "gated-gelu" else ["wi"]
            for name in ins:
                w[f + "DenseReluDense." + name + ".weight"] = normal(
                    c["d_ff"], D_MODEL, std=D_MODEL ** -0.5)
            w[f + "DenseReluDense.wo.weight"] = normal(D_MODEL, c["d_ff"], std=c["d_ff"] ** -0.5)
    return w


def bucket(relative, bidirectional, num_buckets, max_distance):
    """The bucket of each relative position (key minus query), float32 as T5 computes it."""
    result = torch.zeros_like(relative)
    if bidirectional:
        num_buckets = num_buckets // 2
        result = result + (relative > 0).long() * num_buckets
        distance = relative.abs()
    else:
        distance = torch.clamp(-relative, min=0)
    exact = num_buckets // 2
    scaled = torch.log(distance.float() / exact) / math.log(max_distance / exact)
    large = exact + (scaled * (num_buckets - exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return result + torch.where(distance < exact, distance, large)


def rms(x, weight, eps):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))


def attention(c, w, a, x, source, bias):
    """softmax(q k^T + bias) v with no 1/sqrt(d) scale; source is x itself for self-attention."""
    b, t, h, d = x.shape[0], x.shape[1], c["num_heads"], c["d_kv"]
    q = (x @ w[a + "q.weight"].t()).view(b, t, h, d).transpose(1, 2)
    k = (source @ w[a + "k.weight"].t()).view(b, -1, h, d).transpose(1, 2)
    v = (source @ w[a + "v.weight"].t()).view(b, -1, h, d).transpose(1, 2)
    scores = q @ k.transpose(2, 3) + bias
    y = scores.float().softmax(-1) @ v
    return y.transpose(1, 2).reshape(b, t, h * d) @ w[a + "o.weight"].t()


def stack(c, w, name, ids, mask_bias, bidirectional, encoder_states=None, cross_bias=None):
    eps = c["layer_norm_epsilon"]
    x = w["shared.weight"][ids]
    depth = c["num_layers"] if name == "encoder" else c["num_decoder_layers"]
    position_bias = None
    for i in range(depth):
        p = f"{name}.block.{i}.layer."
        if position_bias is None:
            t = ids.shape[1]
            relative = torch.arange(t)[None, :] - torch.arange(t)[:, None]
            buckets = bucket(relative, bidirectional, c["relative_attention_num_buckets"],
                             c["relative_attention_max_distance"])
            table = w[p + "0.SelfAttention.relative_attention_bias.weight"]
            position_bias = table[buckets].permute(2, 0, 1).unsqueeze(0) + mask_bias
        normed = rms(x, w[p + "0.layer_norm.weight"], eps)
        x = x + attention(c, w, p + "0.SelfAttention.", normed, normed, position_bias)
        f = p + "1."
        if encoder_states is not None:
            normed = rms(x, w[p + "1.layer_norm.weight"], eps)
            x = x + attention(c, w, p + "1.EncDecAttention.", normed, encoder_states, cross_bias)
            f = p + "2."
        normed = rms(x, w[f + "layer_norm.weight"], eps)
        dense = f + "DenseReluDense."
        if c["feed_forward_proj"] == "gated-gelu":
            hidden = gelu_tanh(normed @ w[dense + "wi_0.weight"].t()) * (
                normed @ w[dense + "wi_1.weight"].t())
        else:
            hidden = torch.relu(normed @ w[dense + "wi.weight"].t())
        x = x + hidden @ w[dense + "wo.weight"].t()
    return rms(x, w[name + ".final_layer_norm.weight"], eps)


def forward(c, w, ids, mask, decoder_ids):
    minimum = torch.finfo(torch.float32).min
    padding = (1.0 - mask[:, None, None, :].float()) * minimum
    encoded = stack(c, w, "encoder", ids, padding, True)
    t = decoder_ids.shape[1]
    causal = torch.zeros(t, t).masked_fill(torch.ones(t, t).triu(1).bool(), minimum)
    hidden = stack(c, w, "decoder", decoder_ids, causal, False, encoded, padding)
    if c["tie_word_embeddings"]:
        hidden = hidden * (c["d_model"] ** -0.5)
        return hidden @ w["shared.weight"].t()
    return hidden @ w["lm_head.weight"].t()


def shift_right(c, labels):
    shifted = torch.full_like(labels, c["decoder_start_token_id"])
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == -100, c["pad_token_id"])


def bucket_tables(c):
    relative = torch.arange(-300, 301)
    tables = {}
    for buckets, distance in ((c["relative_attention_num_buckets"],
                               c["relative_attention_max_distance"]), (32, 128)):
        for bidirectional in (True, False):
            key = f"{buckets}/{distance}/{'bidirectional' if bidirectional else 'causal'}"
            tables[key] = bucket(relative, bidirectional, buckets, distance).tolist()
    return tables


def main():
    for seed, (name, case) in enumerate(CASES.items()):
        torch.manual_seed(100 + seed)
        config = config_of(case)
        w = {k: v.requires_grad_() for k, v in weights(config).items()}
        ids = torch.randint(2, VOCAB, (BATCH, SOURCE))
        mask = torch.ones(BATCH, SOURCE, dtype=torch.long)
        mask[1, -4:] = 0
        ids[1, -4:] = config["pad_token_id"]
        labels = torch.randint(1, VOCAB, (BATCH, TARGET))
        labels[1, -3:] = -100
        decoder_ids = shift_right(config, labels)
        logits = forward(config, w, ids, mask, decoder_ids)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-100)
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
            json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist(),
                       "labels": labels.tolist(), "decoder_input_ids": decoder_ids.tolist(),
                       "loss": loss.item(), "buckets": bucket_tables(config)}, f)
        print(name, "loss", loss.item())


if __name__ == "__main__":
    main()
