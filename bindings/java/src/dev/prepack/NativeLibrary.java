package dev.prepack;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the JNI module (libprepack_jni.so) and libprepack.so.0, so users
 * never set java.library.path.
 *
 * <p>In order: the directory named by the system property
 * {@code dev.prepack.library.path}; else the copies packed in the jar under
 * {@code dev/prepack/native/<os>-<arch>/}, extracted to a temporary
 * directory that is removed once they are loaded; else
 * {@code System.loadLibrary("prepack_jni")}.
 *
 * <p>Called by the generated JNI class; public only for that reason.
 */
public final class NativeLibrary {
    /** System property: a directory holding libprepack_jni.so (and libprepack.so.0). */
    public static final String PATH_PROPERTY = "dev.prepack.library.path";

    // libprepack.so.0 first: the JNI module's dependency is then already
    // loaded under its soname, whatever the module's RUNPATH says.
    private static final String[] LIBRARIES = {"libprepack.so.0", "libprepack_jni.so"};

    private static boolean loaded;

    private NativeLibrary() {}

    public static synchronized void load() {
        if (loaded) {
            return;
        }
        String dir = System.getProperty(PATH_PROPERTY);
        if (dir != null) {
            loadFrom(Path.of(dir));
        } else if (NativeLibrary.class.getResource(resourceDir() + LIBRARIES[1]) != null) {
            loadFromJar();
        } else {
            System.loadLibrary("prepack_jni");
        }
        loaded = true;
    }

    private static void loadFrom(Path dir) {
        for (String name : LIBRARIES) {
            Path p = dir.resolve(name);
            if (Files.exists(p)) {
                System.load(p.toAbsolutePath().toString());
            }
        }
    }

    private static void loadFromJar() {
        try {
            Path tmp = Files.createTempDirectory("prepack-native");
            try {
                for (String name : LIBRARIES) {
                    try (InputStream in = NativeLibrary.class.getResourceAsStream(resourceDir() + name)) {
                        if (in != null) {
                            Files.copy(in, tmp.resolve(name), StandardCopyOption.REPLACE_EXISTING);
                        }
                    }
                }
                loadFrom(tmp);
            } finally {
                // Loaded libraries stay mapped after their files are gone.
                for (String name : LIBRARIES) {
                    Files.deleteIfExists(tmp.resolve(name));
                }
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot extract the prepack native library: " + e);
        }
    }

    /** The jar folder for this platform, e.g. /dev/prepack/native/linux-x86_64/. */
    static String resourceDir() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64")) {
            arch = "x86_64";
        }
        return "/dev/prepack/native/" + os + "-" + arch + "/";
    }
}
