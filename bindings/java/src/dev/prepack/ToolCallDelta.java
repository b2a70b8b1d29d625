package dev.prepack;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A piece of a tool call as it is generated (OpenAI's streaming delta): a
 * call's first piece has its id and name, its arguments follow in pieces;
 * those of one index add up to the {@link ToolCall}. Immutable.
 */
public final class ToolCallDelta {
    private final int index;
    private final String id;
    private final String name;
    private final String arguments;

    ToolCallDelta(dev.prepack.swig.ToolCallDelta n) {
        index = n.getIndex();
        id = n.getId();
        name = n.getName();
        arguments = n.getArguments();
    }

    /** Copies a native vector (it stays owned by its holder). */
    static List<ToolCallDelta> listOf(dev.prepack.swig.ToolCallDeltaVector v) {
        if (v.isEmpty()) return Collections.emptyList();
        List<ToolCallDelta> out = new ArrayList<>(v.size());
        for (int i = 0; i < v.size(); i++) {
            out.add(new ToolCallDelta(v.get(i)));   // get() views the vector's element
        }
        return Collections.unmodifiableList(out);
    }

    /** The call's place in the answer: 0, 1, ... */
    public int index() {
        return index;
    }

    /** The call's id on its first piece; "" after. */
    public String id() {
        return id;
    }

    /** The function on the call's first piece; "" after. */
    public String name() {
        return name;
    }

    /** A piece of the arguments' JSON text (may be ""). */
    public String arguments() {
        return arguments;
    }

    @Override
    public String toString() {
        return index + ":" + id + " " + name + arguments;
    }
}
