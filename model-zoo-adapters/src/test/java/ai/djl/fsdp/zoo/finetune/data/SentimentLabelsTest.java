package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The seq2seq demo's data: every sentence once, the test split disjoint from the train split, the
 * labels the three words in both, and the same splits for the same seed.
 */
class SentimentLabelsTest {

    @Test
    void splitsAreDisjointLabelledAndSeeded() {
        Map<String, List<Document>> splits = SentimentLabels.generate(150, 42);
        List<Document> train = splits.get("train");
        List<Document> test = splits.get("test");
        assertEquals(150, test.size());
        assertEquals(2880 - 150, train.size());
        Set<String> sources = new HashSet<>();
        Set<String> labels = new HashSet<>();
        for (Document pair : train) {
            sources.add(pair.text());
            labels.add(pair.target());
        }
        assertEquals(train.size(), sources.size(), "every train sentence once");
        assertEquals(Set.of("positive", "negative", "neutral"), labels);
        for (Document pair : test) {
            assertTrue(sources.add(pair.text()), "a test sentence in train: " + pair.text());
            assertTrue(labels.contains(pair.target()), pair.target());
        }
        assertEquals(test, SentimentLabels.generate(150, 42).get("test"));
        assertEquals("The concert felt very superb.", test.get(0).text(), "the demo's sample");
    }
}
