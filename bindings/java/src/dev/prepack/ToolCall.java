package dev.prepack;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One call a chat request's answer made, whole: OpenAI's
 * {@code {"id", "function": {"name", "arguments"}}}. Immutable.
 */
public final class ToolCall {
    private final String id;
    private final String name;
    private final String arguments;

    ToolCall(dev.prepack.swig.ToolCall n) {
        id = n.getId();
        name = n.getName();
        arguments = n.getArguments();
    }

    /** Copies a native vector (it stays owned by its holder). */
    static List<ToolCall> listOf(dev.prepack.swig.ToolCallVector v) {
        if (v.isEmpty()) return Collections.emptyList();
        List<ToolCall> out = new ArrayList<>(v.size());
        for (int i = 0; i < v.size(); i++) {
            out.add(new ToolCall(v.get(i)));   // get() views the vector's element
        }
        return Collections.unmodifiableList(out);
    }

    /** The call's id, {@code "call_"} and 24 characters. */
    public String id() {
        return id;
    }

    /** The function called. */
    public String name() {
        return name;
    }

    /** The arguments: a JSON object's text, held to the tool's parameters schema. */
    public String arguments() {
        return arguments;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof ToolCall)) return false;
        ToolCall c = (ToolCall) o;
        return id.equals(c.id) && name.equals(c.name) && arguments.equals(c.arguments);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, name, arguments);
    }

    @Override
    public String toString() {
        return id + " " + name + arguments;
    }
}
