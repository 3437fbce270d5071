package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Checks the models' numerics against a direct transcription of the Hugging Face forward passes in
 * scalar double-precision Java (no DJL), on small configurations: Conv1D's input-major layout, tanh
 * GELU, LayerNorm, the causal mask, the tied head; RMSNorm, Hugging Face's rotary layout,
 * grouped-query head sharing, SwiGLU.
 */
class ReferenceNumericsTest {

    private static final long[] IDS = {3, 11, 0, 7, 7, 12};

    @Test
    void gpt2MatchesTheReference() {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", "gpt2");
        json.addProperty("vocab_size", 13);
        json.addProperty("n_positions", 8);
        json.addProperty("n_embd", 8);
        json.addProperty("n_layer", 2);
        json.addProperty("n_head", 2);
        check(GPT2Config.fromJson(json), ReferenceNumericsTest::gpt2);
    }

    @Test
    void llamaMatchesTheReference() {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", "llama");
        json.addProperty("vocab_size", 13);
        json.addProperty("hidden_size", 8);
        json.addProperty("intermediate_size", 12);
        json.addProperty("num_hidden_layers", 2);
        json.addProperty("num_attention_heads", 2);
        json.addProperty("num_key_value_heads", 1);
        json.addProperty("rope_theta", 500.0);
        json.addProperty("rms_norm_eps", 1e-5);
        check(LlamaConfig.fromJson(json), ReferenceNumericsTest::llama);
    }

    private interface Reference {
        double[][] logits(Map<String, Mat> weights, ModelConfig config, long[] ids);
    }

    private static void check(ModelConfig config, Reference reference) {
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(13);
            CausalLM model = Models.create(config, manager);
            // Fresh norms are ones and zeros; perturb every parameter so each one matters.
            for (Parameter p : StateDict.parameters(model).values()) {
                NDArray noise =
                        manager.randomNormal(0, 0.3f, p.getShape(), p.getArray().getDataType());
                p.getArray().addi(noise);
            }
            Map<String, Mat> weights = new java.util.HashMap<>();
            StateDict.parameters(model)
                    .forEach((name, p) -> weights.put(name, new Mat(p.getArray())));
            StateDict.aliases(model)
                    .forEach((alias, name) -> weights.put(alias, weights.get(name)));

            NDArray ids = manager.create(IDS).reshape(1, IDS.length);
            float[] actual = TestModels.logits(model, ids, null).toFloatArray();
            double[][] expected = reference.logits(weights, config, IDS);
            int v = config.vocabSize();
            for (int t = 0; t < IDS.length; t++) {
                for (int j = 0; j < v; j++) {
                    double diff = Math.abs(actual[t * v + j] - expected[t][j]);
                    assertTrue(diff < 1e-4, "logit [" + t + ", " + j + "] differs by " + diff);
                }
            }
        }
    }

    private static double[][] gpt2(Map<String, Mat> w, ModelConfig modelConfig, long[] ids) {
        GPT2Config config = (GPT2Config) modelConfig;
        int c = config.hiddenSize();
        double eps = config.layerNormEpsilon();
        double[][] x = new double[ids.length][];
        for (int t = 0; t < ids.length; t++) {
            x[t] =
                    add(
                            w.get("transformer.wte.weight").row((int) ids[t]),
                            w.get("transformer.wpe.weight").row(t));
        }
        for (int l = 0; l < config.numLayers(); l++) {
            String p = "transformer.h." + l + '.';
            double[][] qkv = new double[ids.length][];
            for (int t = 0; t < ids.length; t++) {
                double[] h = layerNorm(x[t], w.get(p + "ln_1.weight"), w.get(p + "ln_1.bias"), eps);
                qkv[t] =
                        affine(
                                h,
                                w.get(p + "attn.c_attn.weight").transpose(),
                                w.get(p + "attn.c_attn.bias"));
            }
            double[][] attn =
                    attention(
                            qkv,
                            qkv,
                            qkv,
                            config.numHeads(),
                            1,
                            c / config.numHeads(),
                            0,
                            c,
                            2 * c);
            for (int t = 0; t < ids.length; t++) {
                x[t] =
                        add(
                                x[t],
                                affine(
                                        attn[t],
                                        w.get(p + "attn.c_proj.weight").transpose(),
                                        w.get(p + "attn.c_proj.bias")));
                double[] h = layerNorm(x[t], w.get(p + "ln_2.weight"), w.get(p + "ln_2.bias"), eps);
                double[] inner =
                        affine(
                                h,
                                w.get(p + "mlp.c_fc.weight").transpose(),
                                w.get(p + "mlp.c_fc.bias"));
                for (int i = 0; i < inner.length; i++) {
                    double u = inner[i];
                    inner[i] =
                            0.5
                                    * u
                                    * (1
                                            + Math.tanh(
                                                    Math.sqrt(2 / Math.PI)
                                                            * (u + 0.044715 * u * u * u)));
                }
                x[t] =
                        add(
                                x[t],
                                affine(
                                        inner,
                                        w.get(p + "mlp.c_proj.weight").transpose(),
                                        w.get(p + "mlp.c_proj.bias")));
            }
        }
        double[][] logits = new double[ids.length][];
        for (int t = 0; t < ids.length; t++) {
            double[] h =
                    layerNorm(
                            x[t],
                            w.get("transformer.ln_f.weight"),
                            w.get("transformer.ln_f.bias"),
                            eps);
            logits[t] = affine(h, w.get("lm_head.weight"), null);
        }
        return logits;
    }

    private static double[][] llama(Map<String, Mat> w, ModelConfig modelConfig, long[] ids) {
        LlamaConfig config = (LlamaConfig) modelConfig;
        int d = config.headDim();
        double eps = config.rmsNormEps();
        double[][] x = new double[ids.length][];
        for (int t = 0; t < ids.length; t++) {
            x[t] = w.get("model.embed_tokens.weight").row((int) ids[t]);
        }
        for (int l = 0; l < config.numLayers(); l++) {
            String p = "model.layers." + l + '.';
            double[][] q = new double[ids.length][];
            double[][] k = new double[ids.length][];
            double[][] v = new double[ids.length][];
            for (int t = 0; t < ids.length; t++) {
                double[] h = rmsNorm(x[t], w.get(p + "input_layernorm.weight"), eps);
                q[t] =
                        rotate(
                                affine(h, w.get(p + "self_attn.q_proj.weight"), null),
                                t,
                                d,
                                config.ropeTheta());
                k[t] =
                        rotate(
                                affine(h, w.get(p + "self_attn.k_proj.weight"), null),
                                t,
                                d,
                                config.ropeTheta());
                v[t] = affine(h, w.get(p + "self_attn.v_proj.weight"), null);
            }
            int groups = config.numHeads() / config.numKeyValueHeads();
            double[][] attn = attention(q, k, v, config.numHeads(), groups, d, 0, 0, 0);
            for (int t = 0; t < ids.length; t++) {
                x[t] = add(x[t], affine(attn[t], w.get(p + "self_attn.o_proj.weight"), null));
                double[] h = rmsNorm(x[t], w.get(p + "post_attention_layernorm.weight"), eps);
                double[] gate = affine(h, w.get(p + "mlp.gate_proj.weight"), null);
                double[] up = affine(h, w.get(p + "mlp.up_proj.weight"), null);
                for (int i = 0; i < gate.length; i++) {
                    gate[i] = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
                }
                x[t] = add(x[t], affine(gate, w.get(p + "mlp.down_proj.weight"), null));
            }
        }
        double[][] logits = new double[ids.length][];
        for (int t = 0; t < ids.length; t++) {
            logits[t] =
                    affine(
                            rmsNorm(x[t], w.get("model.norm.weight"), eps),
                            w.get("lm_head.weight"),
                            null);
        }
        return logits;
    }

    /**
     * Causal attention over rows of q, k, v; head {@code h} reads keys and values of head {@code h
     * / groups}, each at its column offset.
     */
    private static double[][] attention(
            double[][] q,
            double[][] k,
            double[][] v,
            int heads,
            int groups,
            int d,
            int qOff,
            int kOff,
            int vOff) {
        int n = q.length;
        double[][] out = new double[n][heads * d];
        for (int h = 0; h < heads; h++) {
            int kvHead = h / groups;
            for (int t = 0; t < n; t++) {
                double[] scores = new double[t + 1];
                double max = Double.NEGATIVE_INFINITY;
                for (int s = 0; s <= t; s++) {
                    for (int i = 0; i < d; i++) {
                        scores[s] += q[t][qOff + h * d + i] * k[s][kOff + kvHead * d + i];
                    }
                    scores[s] /= Math.sqrt(d);
                    max = Math.max(max, scores[s]);
                }
                double total = 0;
                for (int s = 0; s <= t; s++) {
                    scores[s] = Math.exp(scores[s] - max);
                    total += scores[s];
                }
                for (int s = 0; s <= t; s++) {
                    for (int i = 0; i < d; i++) {
                        out[t][h * d + i] += scores[s] / total * v[s][vOff + kvHead * d + i];
                    }
                }
            }
        }
        return out;
    }

    /** Hugging Face's rotary embedding: element i pairs with element i + d/2 of each head. */
    private static double[] rotate(double[] x, int position, int d, double theta) {
        double[] out = x.clone();
        for (int head = 0; head < x.length / d; head++) {
            for (int i = 0; i < d / 2; i++) {
                double angle = position * Math.pow(theta, -2.0 * i / d);
                double a = x[head * d + i];
                double b = x[head * d + i + d / 2];
                out[head * d + i] = a * Math.cos(angle) - b * Math.sin(angle);
                out[head * d + i + d / 2] = b * Math.cos(angle) + a * Math.sin(angle);
            }
        }
        return out;
    }

    private static double[] layerNorm(double[] x, Mat weight, Mat bias, double eps) {
        double mean = 0;
        for (double value : x) {
            mean += value / x.length;
        }
        double variance = 0;
        for (double value : x) {
            variance += (value - mean) * (value - mean) / x.length;
        }
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = (x[i] - mean) / Math.sqrt(variance + eps) * weight.data[i] + bias.data[i];
        }
        return out;
    }

    private static double[] rmsNorm(double[] x, Mat weight, double eps) {
        double meanSquare = 0;
        for (double value : x) {
            meanSquare += value * value / x.length;
        }
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] / Math.sqrt(meanSquare + eps) * weight.data[i];
        }
        return out;
    }

    /** {@code W x + b} for {@code W [out, in]}. */
    private static double[] affine(double[] x, Mat weight, Mat bias) {
        double[] out = new double[weight.rows];
        for (int o = 0; o < weight.rows; o++) {
            double sum = bias == null ? 0 : bias.data[o];
            for (int i = 0; i < weight.cols; i++) {
                sum += weight.data[o * weight.cols + i] * x[i];
            }
            out[o] = sum;
        }
        return out;
    }

    private static double[] add(double[] a, double[] b) {
        double[] out = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = a[i] + b[i];
        }
        return out;
    }

    /** A row-major matrix (or vector) in double precision. */
    private static final class Mat {
        final int rows;
        final int cols;
        final double[] data;

        Mat(int rows, int cols, double[] data) {
            this.rows = rows;
            this.cols = cols;
            this.data = data;
        }

        Mat(NDArray array) {
            this(
                    (int) (array.getShape().dimension() == 2 ? array.getShape().get(0) : 1),
                    (int) array.getShape().get(array.getShape().dimension() - 1),
                    toDoubles(array.toFloatArray()));
        }

        double[] row(int r) {
            return java.util.Arrays.copyOfRange(data, r * cols, (r + 1) * cols);
        }

        Mat transpose() {
            double[] t = new double[data.length];
            for (int r = 0; r < rows; r++) {
                for (int c = 0; c < cols; c++) {
                    t[c * rows + r] = data[r * cols + c];
                }
            }
            return new Mat(cols, rows, t);
        }

        private static double[] toDoubles(float[] values) {
            double[] out = new double[values.length];
            for (int i = 0; i < values.length; i++) {
                out[i] = values[i];
            }
            return out;
        }
    }
}
