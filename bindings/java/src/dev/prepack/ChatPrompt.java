package dev.prepack;

/**
 * The prompt a chat request gets ({@link Engine#renderChat(Conversation)}):
 * the rendered text and its token ids, the template's markup as control
 * tokens and the messages' text as text. Immutable.
 */
public final class ChatPrompt {
    private final String text;
    private final int[] ids;

    ChatPrompt(dev.prepack.swig.ChatPrompt n) {
        text = n.getText();
        ids = Convert.ints(n.getIds());
    }

    public String text() {
        return text;
    }

    /** The token ids, BOS first as the vocabulary says. */
    public int[] ids() {
        return ids.clone();
    }

    @Override
    public String toString() {
        return text;
    }
}
