package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.finetune.data.ChatFormat;
import ai.djl.fsdp.zoo.finetune.data.DistributedSampler;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Evaluation on the eval split, run by every rank together (each forward gathers the units): the
 * mean next-token loss over the labels, and for conversations the exact-match accuracy of the
 * model's greedy reply to each held-out question.
 */
final class Evaluation {

    /**
     * The result of an exact-match evaluation.
     *
     * @param correct replies equal to the reference
     * @param total questions asked
     * @param question rank 0's first question
     * @param reply the model's reply to it
     */
    record ExactMatch(long correct, long total, String question, String reply) {
        double accuracy() {
            return total == 0 ? Double.NaN : correct / (double) total;
        }
    }

    private final FsdpTrainer trainer;
    private final ProcessGroup group;

    Evaluation(FsdpTrainer trainer, ProcessGroup group) {
        this.trainer = trainer;
        this.group = group;
    }

    /**
     * Returns the eval split's mean loss per label (all ranks' batches together).
     *
     * @param eval the eval sequences
     * @param batchSize sequences per rank and batch
     * @param padId the padding input id
     * @return the loss
     */
    double loss(Sequences eval, int batchSize, long padId) {
        DistributedSampler sampler =
                new DistributedSampler(
                        eval.getSequences().size(),
                        group.getRank(),
                        group.getSize(),
                        batchSize,
                        false,
                        0);
        CausalLmLoss loss = new CausalLmLoss();
        double sum = 0;
        double count = 0;
        while (sampler.hasNext()) {
            int[] indices = sampler.next();
            try (NDManager manager = trainer.getManager().newSubManager()) {
                NDList batch = eval.batch(manager, indices, padId);
                NDList logits = trainer.evaluate(Sequences.modelInputs(batch));
                long labels = eval.countLabels(indices);
                sum += loss.evaluate(new NDList(batch.get(1)), logits).getFloat() * labels;
                count += labels;
            }
        }
        double[] totals = allReduceSum(sum, count);
        return totals[0] / Math.max(1, totals[1]);
    }

    /**
     * Asks the model each held-out question (the conversation up to its last reply) and compares
     * its greedy reply, up to the end-of-turn token, with the reference.
     *
     * @param documents the eval conversations
     * @param samples the most questions to ask
     * @param tokenizer the tokenizer with the chat template's tokens
     * @param format how the questions are put to the model
     * @param endOfTurn the end-of-turn token id
     * @param padId the padding input id
     * @param chunk questions per rank and forward
     * @return the result
     */
    ExactMatch exactMatch(
            List<Document> documents,
            int samples,
            HuggingFaceTokenizer tokenizer,
            ChatFormat format,
            long endOfTurn,
            long padId,
            int chunk) {
        List<long[]> prompts = new ArrayList<>();
        List<String> answers = new ArrayList<>();
        List<String> questions = new ArrayList<>();
        int maxAnswer = 0;
        for (Document document : documents) {
            List<Map<String, String>> messages = document.messages();
            if (prompts.size() == samples || messages == null || messages.size() < 2) {
                continue;
            }
            Map<String, String> last = messages.get(messages.size() - 1);
            if (!"assistant".equals(last.get("role"))) {
                continue;
            }
            List<Map<String, String>> asked = messages.subList(0, messages.size() - 1);
            prompts.add(tokenizer.encode(format.generationPrompt(asked)).getIds());
            answers.add(last.get("content"));
            questions.add(asked.get(asked.size() - 1).get("content"));
            maxAnswer = Math.max(maxAnswer, tokenizer.encode(last.get("content")).getIds().length);
        }
        if (prompts.isEmpty()) {
            return new ExactMatch(0, 0, null, null);
        }
        // Every rank runs the same number of forwards: its share, padded with repeats not counted.
        int perRank = (prompts.size() + group.getSize() - 1) / group.getSize();
        long correct = 0;
        String firstReply = null;
        for (int start = 0; start < perRank; start += chunk) {
            int rows = Math.min(chunk, perRank - start);
            int[] which = new int[rows];
            for (int row = 0; row < rows; row++) {
                which[row] = ((start + row) * group.getSize() + group.getRank()) % prompts.size();
            }
            long[][] replies = generate(prompts, which, maxAnswer + 1, endOfTurn, padId);
            for (int row = 0; row < rows; row++) {
                boolean counted =
                        (start + row) * group.getSize() + group.getRank() < prompts.size();
                String reply = tokenizer.decode(replies[row]).trim();
                if (counted && reply.equals(answers.get(which[row]).trim())) {
                    correct++;
                }
                if (firstReply == null) {
                    firstReply = reply;
                }
            }
        }
        double[] totals = allReduceSum(correct, 0);
        return new ExactMatch((long) totals[0], prompts.size(), questions.get(0), firstReply);
    }

    /** Greedy continuation of each prompt, without the end-of-turn token. */
    private long[][] generate(
            List<long[]> prompts, int[] which, int maxNew, long endOfTurn, long padId) {
        int rows = which.length;
        long[][] tokens = new long[rows][];
        int[] lengths = new int[rows];
        int[] promptLengths = new int[rows];
        boolean[] done = new boolean[rows];
        int width = 0;
        for (int row = 0; row < rows; row++) {
            long[] prompt = prompts.get(which[row]);
            tokens[row] = Arrays.copyOf(prompt, prompt.length + maxNew);
            lengths[row] = prompt.length;
            promptLengths[row] = prompt.length;
            width = Math.max(width, prompt.length + maxNew);
        }
        for (int step = 0; step < maxNew; step++) {
            int length = Arrays.stream(lengths).max().orElse(1);
            long[] flat = new long[rows * length];
            Arrays.fill(flat, padId);
            for (int row = 0; row < rows; row++) {
                System.arraycopy(tokens[row], 0, flat, row * length, lengths[row]);
            }
            long[] next;
            try (NDManager manager = trainer.getManager().newSubManager()) {
                NDArray input = manager.create(flat, new Shape(rows, length));
                NDArray logits = trainer.evaluate(new NDList(input)).head();
                next = logits.argMax(2).toLongArray();
            }
            // Right padding never changes a row's own positions: attention is causal.
            for (int row = 0; row < rows; row++) {
                if (!done[row]) {
                    long token = next[row * length + lengths[row] - 1];
                    done[row] = token == endOfTurn;
                    if (!done[row]) {
                        tokens[row][lengths[row]++] = token;
                    }
                }
            }
        }
        long[][] replies = new long[rows][];
        for (int row = 0; row < rows; row++) {
            replies[row] = Arrays.copyOfRange(tokens[row], promptLengths[row], lengths[row]);
        }
        return replies;
    }

    private double[] allReduceSum(double a, double b) {
        try (NDManager manager = trainer.getManager().newSubManager()) {
            NDArray values = manager.create(new float[] {(float) a, (float) b});
            group.allReduce(values, ReduceOp.SUM);
            float[] sums = values.toFloatArray();
            return new double[] {sums[0], sums[1]};
        }
    }
}
