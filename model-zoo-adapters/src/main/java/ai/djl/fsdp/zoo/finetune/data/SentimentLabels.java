package ai.djl.fsdp.zoo.finetune.data;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The built-in seq2seq dataset ({@code --dataset_name sentiment-labels}): the PEFT guide's task in
 * miniature, short sentences the project generates, each labelled {@code positive}, {@code
 * negative} or {@code neutral} by its adjective (as financial_phrasebank's sentences are by their
 * news), so a source-target model learns to write the label. Every sentence is a subject, a verb,
 * an optional degree word and an adjective; the splits are a seeded shuffle of all of them, so no
 * test sentence is in the train split, though each of its words is.
 */
public final class SentimentLabels {

    /** The name {@code --dataset_name} takes for this dataset. */
    public static final String NAME = "sentiment-labels";

    private static final String[] SUBJECTS = {
        "The film",
        "Our meal",
        "This book",
        "The trip",
        "Her speech",
        "The hotel",
        "His plan",
        "The concert",
        "That game",
        "The lecture",
        "Your garden",
        "The service"
    };

    private static final String[] VERBS = {"was", "seemed", "felt", "looked"};

    private static final String[] DEGREES = {"", "very ", "rather ", "quite "};

    private static final String[][] LABELS = {
        {"positive", "great", "lovely", "superb", "delightful", "excellent"},
        {"negative", "awful", "dull", "poor", "dreadful", "terrible"},
        {"neutral", "average", "ordinary", "typical", "standard", "plain"}
    };

    private SentimentLabels() {}

    /**
     * Generates the splits.
     *
     * @param testSize the pairs in {@code test}; the rest of the 2,880 sentences are {@code train}
     * @param seed the seed of the shuffle
     * @return the splits {@code train} and {@code test}, of {@link Document#ofPair} pairs
     */
    public static Map<String, List<Document>> generate(int testSize, long seed) {
        List<Document> all = new ArrayList<>();
        for (String subject : SUBJECTS) {
            for (String verb : VERBS) {
                for (String degree : DEGREES) {
                    for (String[] label : LABELS) {
                        for (int word = 1; word < label.length; word++) {
                            all.add(
                                    Document.ofPair(
                                            subject + " " + verb + " " + degree + label[word] + ".",
                                            label[0]));
                        }
                    }
                }
            }
        }
        Collections.shuffle(all, new Random(seed));
        Map<String, List<Document>> splits = new LinkedHashMap<>();
        splits.put("train", all.subList(testSize, all.size()));
        splits.put("test", all.subList(0, testSize));
        return splits;
    }
}
