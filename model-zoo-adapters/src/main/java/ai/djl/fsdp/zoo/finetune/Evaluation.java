package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.chat.ChatFormat;
import ai.djl.fsdp.zoo.finetune.data.DistributedSampler;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.finetune.data.LabeledBatch;
import ai.djl.fsdp.zoo.finetune.data.Seq2SeqExamples;
import ai.djl.fsdp.zoo.finetune.data.TrainingData;
import ai.djl.fsdp.zoo.finetune.report.ExactMatch;
import ai.djl.fsdp.zoo.finetune.report.Progress;
import ai.djl.fsdp.zoo.generate.GenerationConfig;
import ai.djl.fsdp.zoo.generate.Generator;
import ai.djl.fsdp.zoo.generate.GreedyDecoding;
import ai.djl.fsdp.zoo.generate.ShardedDecoder;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.training.dataset.Batch;
import ai.djl.training.listener.TrainingListener.BatchData;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Evaluation on the eval split, run by every rank together (each forward gathers the units): the
 * mean token loss over the labels, raising DJL's {@code onValidationBatch} for each of this rank's
 * batches (its input ids and labels; no predictions), and the exact-match accuracy of the model's
 * greedy reply to each held-out question (conversations) or of its generated target to each
 * held-out source (an encoder-decoder model).
 */
final class Evaluation {

    private final FsdpTrainer trainer;
    private final ProcessGroup group;

    Evaluation(FsdpTrainer trainer, ProcessGroup group) {
        this.trainer = trainer;
        this.group = group;
    }

    /**
     * Returns the eval split's mean loss per label (all ranks' batches together), each example
     * counted once: the sampler's padding, which evens out the ranks' batches, is run but left out
     * of the sums and of the listeners' batches.
     *
     * @param eval the eval examples
     * @param batchSize examples per rank and batch
     * @return the loss
     */
    double loss(TrainingData eval, int batchSize) {
        DistributedSampler sampler =
                new DistributedSampler(
                        eval.size(), group.getRank(), group.getSize(), batchSize, false, 0);
        CausalLmLoss loss = new CausalLmLoss();
        double sum = 0;
        double count = 0;
        while (sampler.hasNext()) {
            int[] indices = sampler.next();
            int counted = indices.length - sampler.getPadding();
            try (NDManager manager = trainer.getManager().newSubManager()) {
                LabeledBatch batch = eval.batch(manager, indices);
                NDList logits = trainer.evaluate(batch.modelInputs());
                if (counted == 0) {
                    continue; // padding alone: run for the other ranks' gathers, not counted
                }
                NDArray labels = batch.labels();
                if (counted < indices.length) {
                    labels = labels.duplicate();
                    labels.set(new NDIndex(counted + ":"), CausalLmLoss.IGNORE);
                }
                long tokens = eval.countLabels(Arrays.copyOf(indices, counted));
                sum += loss.evaluate(new NDList(labels), logits).getFloat() * tokens;
                count += tokens;
                String rows = ":" + counted;
                BatchData event =
                        new BatchData(
                                new Batch(
                                        manager,
                                        new NDList(batch.modelInputs().get(0).get(rows)),
                                        new NDList(batch.labels().get(rows)),
                                        counted,
                                        null,
                                        null,
                                        sampler.getBatchesRead(),
                                        sampler.getBatchesPerEpoch()),
                                Map.of(),
                                Map.of());
                trainer.notifyListeners(listener -> listener.onValidationBatch(trainer, event));
            }
        }
        double[] totals = allReduceSum(sum, count);
        return totals[0] / Math.max(1, totals[1]);
    }

    /**
     * Asks the recipe's held-out examples as the run reports them: each seq2seq source's target
     * generated, or each conversation's last reply (see {@link #generatedTargets}, {@link
     * #exactMatch}).
     *
     * @param recipe the run's data, tokenizer and chat format
     * @param samples how many examples to ask at most
     * @param batchSize how many to generate at once
     * @return how many answers matched
     */
    ExactMatch heldOut(FinetuneRecipe recipe, int samples, int batchSize) {
        return recipe.eval instanceof Seq2SeqExamples pairs
                ? generatedTargets(
                        pairs, recipe.evalDocuments, samples, batchSize, recipe.tokenizer)
                : exactMatch(
                        recipe.evalDocuments,
                        samples,
                        batchSize,
                        recipe.tokenizer,
                        recipe.chatFormat,
                        recipe.endOfTurn);
    }

    /**
     * Asks the model each held-out question (the conversation up to its last reply) and compares
     * its greedy reply, up to the end-of-turn token, with the reference. Each rank decodes its
     * questions together in batches of at most {@code maxRows} with a key-value cache ({@link
     * ShardedDecoder}): a step gathers each unit once for every question of the batch, and the
     * ranks agree on the number of batches. Rank 0 shows the steps on a progress bar.
     *
     * @param documents the eval conversations
     * @param samples the most questions to ask
     * @param maxRows the most questions a rank decodes together
     * @param tokenizer the tokenizer with the chat template's tokens
     * @param format how the questions are put to the model
     * @param endOfTurn the end-of-turn token id
     * @return the result
     */
    ExactMatch exactMatch(
            List<Document> documents,
            int samples,
            int maxRows,
            HuggingFaceTokenizer tokenizer,
            ChatFormat format,
            long endOfTurn) {
        long begin = System.nanoTime();
        List<long[]> prompts = new ArrayList<>();
        List<String> answers = new ArrayList<>();
        List<String> questions = new ArrayList<>();
        int maxAnswer = 0;
        for (Document document : documents) {
            List<? extends Map<String, ?>> messages = document.messages();
            if (prompts.size() == samples || messages == null || messages.size() < 2) {
                continue;
            }
            Map<String, ?> last = messages.get(messages.size() - 1);
            List<? extends Map<String, ?>> asked = messages.subList(0, messages.size() - 1);
            if (!"assistant".equals(last.get("role"))
                    || !(last.get("content") instanceof String answer)
                    || !(asked.get(asked.size() - 1).get("content") instanceof String question)
                    || document.tools() != null) {
                continue; // exact match asks text questions with text answers
            }
            prompts.add(tokenizer.encode(format.generationPrompt(asked)).getIds());
            answers.add(answer);
            questions.add(question);
            maxAnswer = Math.max(maxAnswer, tokenizer.encode(answer).getIds().length);
        }
        if (prompts.isEmpty()) {
            return new ExactMatch(0, 0, null, null, 0);
        }
        List<Integer> mine = share(prompts.size());
        List<long[]> batch = new ArrayList<>();
        mine.forEach(i -> batch.add(prompts.get(i)));
        GenerationConfig greedy =
                GenerationConfig.builder()
                        .optMaxNewTokens(maxAnswer + 1)
                        .optStopTokens(List.of(endOfTurn))
                        .build();
        CausalLM model = (CausalLM) trainer.getModel().getBlock();
        Generator generator = new Generator(new ShardedDecoder(trainer, model.getConfig(), group));
        long[][] replies;
        // The most batches a rank takes: its share of the questions is at most the first rank's.
        int shares = (prompts.size() + group.getSize() - 1) / group.getSize();
        long steps = (long) Generator.batches(shares, maxRows) * greedy.getMaxNewTokens();
        try (NDManager manager = trainer.getManager().newSubManager();
                Progress progress = Progress.open("exact match", steps, group.getRank() == 0)) {
            replies =
                    generator.generate(
                            manager, batch, greedy, maxRows, step -> progress.update(step, ""));
        }
        long correct = 0;
        String firstReply = null;
        for (int row = 0; row < replies.length; row++) {
            long[] reply = replies[row];
            if (reply.length > 0 && reply[reply.length - 1] == endOfTurn) {
                reply = Arrays.copyOf(reply, reply.length - 1);
            }
            String text = tokenizer.decode(reply).trim();
            int question = mine.get(row);
            if (question % group.getSize() == group.getRank()
                    && text.equals(answers.get(question).trim())) {
                correct++;
            }
            if (firstReply == null) {
                firstReply = text;
            }
        }
        double[] totals = allReduceSum(correct, 0);
        double seconds = (System.nanoTime() - begin) / 1e9;
        return new ExactMatch(
                (long) totals[0], prompts.size(), questions.get(0), firstReply, seconds);
    }

    /**
     * Generates each held-out example's target greedily, as the PEFT guide's script does (the
     * encoder-decoder model's encoder once, its decoder with a cache: {@link GreedyDecoding}), and
     * compares the decoded text, up to the end of sequence, with the reference. Each rank generates
     * its share of the examples in batches of at most {@code maxRows}, every unit gathered once a
     * step for the batch; the ranks agree on the number of batches. Rank 0 shows the batches on a
     * progress bar.
     *
     * @param eval the eval examples
     * @param documents their source and target texts, in the same order
     * @param samples the most examples to generate
     * @param maxRows the most examples a rank generates together
     * @param tokenizer the tokenizer
     * @return the result
     */
    ExactMatch generatedTargets(
            Seq2SeqExamples eval,
            List<Document> documents,
            int samples,
            int maxRows,
            HuggingFaceTokenizer tokenizer) {
        long begin = System.nanoTime();
        int total = Math.min(samples, eval.size());
        EncoderDecoderConfig config =
                (EncoderDecoderConfig)
                        ((PretrainedModel) trainer.getModel().getBlock()).getConfig();
        int maxTarget = 0;
        for (int i = 0; i < total; i++) {
            maxTarget = Math.max(maxTarget, eval.getPairs().get(i).target().length);
        }
        List<Integer> mine = share(total);
        int shares = (total + group.getSize() - 1) / group.getSize();
        int batches = (shares + maxRows - 1) / maxRows;
        long correct = 0;
        String firstReply = null;
        try (NDManager manager = trainer.getManager().newSubManager();
                Progress progress = Progress.open("exact match", batches, group.getRank() == 0)) {
            for (int b = 0; b < batches; b++) {
                // A rank out of examples generates its first again, not counted.
                List<Integer> rows =
                        b * maxRows < mine.size()
                                ? mine.subList(
                                        b * maxRows, Math.min(mine.size(), (b + 1) * maxRows))
                                : mine.subList(0, 1);
                boolean counted = b * maxRows < mine.size();
                int[] indices = rows.stream().mapToInt(Integer::intValue).toArray();
                NDList sources = eval.sources(manager, indices);
                List<long[]> targets =
                        GreedyDecoding.generate(
                                trainer, config, sources.get(0), sources.get(1), maxTarget);
                for (int row = 0; row < indices.length; row++) {
                    String text = GreedyDecoding.text(tokenizer, targets.get(row), config);
                    int example = indices[row];
                    if (counted
                            && example % group.getSize() == group.getRank()
                            && text.equals(documents.get(example).target().trim())) {
                        correct++;
                    }
                    firstReply = firstReply == null ? text : firstReply;
                }
                sources.close();
                progress.update(b + 1, "");
            }
        }
        double[] totals = allReduceSum(correct, 0);
        double seconds = (System.nanoTime() - begin) / 1e9;
        return new ExactMatch(
                (long) totals[0], total, documents.get(0).text(), firstReply, seconds);
    }

    /**
     * Returns this rank's examples of {@code total}: example i is rank (i % ranks)'s; a rank with
     * none takes one of the others', not counted, so that no rank's batch is empty.
     */
    private List<Integer> share(int total) {
        List<Integer> mine = new ArrayList<>();
        for (int i = group.getRank(); i < total; i += group.getSize()) {
            mine.add(i);
        }
        if (mine.isEmpty()) {
            mine.add(group.getRank() % total);
        }
        return mine;
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
