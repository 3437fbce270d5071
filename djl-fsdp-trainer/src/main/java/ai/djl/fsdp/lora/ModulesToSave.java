package ai.djl.fsdp.lora;

import ai.djl.fsdp.statedict.StateDict;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * PEFT's {@code modules_to_save} in a Block tree ({@link LoraConfig#getModulesToSave()}): the
 * parameters those modules hold, which train whole beside the adapters and are saved with them, and
 * the names PEFT can be told to wrap.
 */
final class ModulesToSave {

    private ModulesToSave() {}

    /**
     * Returns the parameters of the modules saved with the adapters, by their state-dict names (a
     * parameter two modules share once, under its first name), in tree order.
     */
    static Map<String, Parameter> parameters(Block root, LoraConfig config) {
        Set<Parameter> inSavedModules = Collections.newSetFromMap(new IdentityHashMap<>());
        StateDict.modules(root)
                .forEach(
                        (path, block) -> {
                            if (config.savesModule(path)) {
                                block.getParameters()
                                        .forEach(pair -> inSavedModules.add(pair.getValue()));
                            }
                        });
        Map<String, Parameter> saved = new LinkedHashMap<>();
        StateDict.parameters(root)
                .forEach(
                        (name, parameter) -> {
                            if (inSavedModules.contains(parameter)) {
                                saved.put(name, parameter);
                            }
                        });
        return saved;
    }

    /**
     * The names of {@code modules_to_save} PEFT can wrap: those whose modules share no parameter
     * with another module. PEFT's wrapper trains a copy of a module, which would untie a head from
     * the embedding it shares; a tied module is saved all the same, and PEFT loads its key into the
     * shared base weight.
     */
    static List<String> wrappable(Block root, LoraConfig config) {
        Map<String, String> aliases = StateDict.aliases(root);
        Set<String> tied = new TreeSet<>(aliases.keySet());
        tied.addAll(aliases.values());
        Map<String, Block> modules = StateDict.modules(root);
        List<String> wrappable = new ArrayList<>();
        for (String name : config.getModulesToSave()) {
            boolean shares =
                    modules.keySet().stream()
                            .filter(path -> path.equals(name) || path.endsWith('.' + name))
                            .anyMatch(
                                    path ->
                                            tied.stream()
                                                    .anyMatch(
                                                            tiedName ->
                                                                    tiedName.startsWith(
                                                                            path + '.')));
            if (!shares) {
                wrappable.add(name);
            }
        }
        return wrappable;
    }
}
