import dev.prepack.Engine;
import dev.prepack.EngineOptions;
import dev.prepack.Request;
import dev.prepack.Result;
import dev.prepack.Stream;
import dev.prepack.Token;

/**
 * Streams a continuation of a prompt, then prints the full result's usage.
 *
 * <pre>java -cp prepack.jar:examples Example MODEL.gguf ["prompt"] [max_tokens]</pre>
 */
public final class Example {
    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: Example MODEL.gguf [prompt] [max_tokens]");
            System.exit(2);
        }
        String prompt = args.length > 1 ? args[1] : "Once upon a time";
        int maxTokens = args.length > 2 ? Integer.parseInt(args[2]) : 32;

        try (Engine engine = Engine.open(new EngineOptions(args[0]).threads(1))) {
            Request request = new Request(prompt).maxTokens(maxTokens).temperature(0f);
            System.out.print(prompt);
            try (Stream stream = engine.start(request)) {
                while (stream.hasNext()) {
                    Token t = stream.next();
                    System.out.print(t.text());
                    System.out.flush();
                }
                Result r = stream.result();
                System.out.printf("%n[%s, %d prompt + %d generated tokens, %.1f ms]%n", r.finishReason(),
                        r.usage().promptTokens(), r.usage().completionTokens(), r.usage().totalMs());
            }
        }
    }
}
