package ai.djl.fsdp.zoo.finetune.data;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The built-in dataset ({@code --dataset_name arithmetic-chat}): short question-and-answer
 * conversations the project generates from a seed, so the main job needs no download. Questions are
 * unit conversions, successors, sums and comparisons of small numbers; every answer is exact, so
 * held-out accuracy is an exact match. The test split's questions never occur in the train split.
 */
public final class ArithmeticChat {

    /** The name {@code --dataset_name} takes for this dataset. */
    public static final String NAME = "arithmetic-chat";

    private static final String[][] UNITS = {
        {"km", "m", "000"}, {"m", "cm", "00"}, {"kg", "g", "000"}, {"L", "mL", "000"}
    };

    private final Random random;

    private ArithmeticChat(long seed) {
        this.random = new Random(seed);
    }

    /**
     * Generates the splits.
     *
     * @param trainSize the conversations in {@code train}
     * @param testSize the conversations in {@code test}, none of whose questions is in train
     * @param seed the seed
     * @return the splits {@code train} and {@code test}
     */
    public static Map<String, List<Document>> generate(int trainSize, int testSize, long seed) {
        ArithmeticChat generator = new ArithmeticChat(seed);
        Set<String> seen = new HashSet<>();
        Map<String, List<Document>> splits = new LinkedHashMap<>();
        splits.put("test", generator.draw(testSize, seen));
        splits.put("train", generator.draw(trainSize, seen));
        return splits;
    }

    private List<Document> draw(int count, Set<String> seen) {
        List<Document> documents = new ArrayList<>(count);
        while (documents.size() < count) {
            String[] pair = question();
            if (seen.add(pair[0])) {
                documents.add(
                        Document.ofMessages(
                                List.of(
                                        Map.of("role", "user", "content", pair[0]),
                                        Map.of("role", "assistant", "content", pair[1]))));
            }
        }
        return documents;
    }

    private String[] question() {
        int a = random.nextInt(100);
        int b = random.nextInt(100);
        switch (random.nextInt(4)) {
            case 0:
                String[] unit = UNITS[random.nextInt(UNITS.length)];
                int n = 1 + random.nextInt(999);
                return new String[] {
                    "Convert " + n + " " + unit[0] + " to " + unit[1] + ".",
                    n + unit[2] + " " + unit[1]
                };
            case 1:
                int c = random.nextInt(1000);
                return new String[] {"What number comes after " + c + "?", String.valueOf(c + 1)};
            case 2:
                return new String[] {"What is " + a + " + " + b + "?", String.valueOf(a + b)};
            default:
                if (a == b) {
                    b = (a + 1) % 100;
                }
                return new String[] {
                    "Which is larger, " + a + " or " + b + "?", String.valueOf(Math.max(a, b))
                };
        }
    }
}
